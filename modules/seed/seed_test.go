package seed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
)

// The full private seed: order at the relay, membership, history, chains
// and the hot thread, and the reuse of a host this run's owner already holds.
func TestSeedPrivateEndToEnd(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "e2e", privateShape)
	op := operatorHTTP(t, r, r.OperatorKeys())

	// Community 0 exists already, owned by this run's fixture owner: seed
	// must reuse it. It also lets us subscribe before the seed starts.
	if _, res := op.ProvisionCommunity(context.Background(), sc.CommunityHost(0), sc.OwnerKeys(0).PubKey(), true, relayclient.CallOptions{}); res.Outcome != relayclient.OutcomeOK {
		t.Fatal(res.Error)
	}
	var ids []string
	for i := range sc.Shape.ChannelsPerCommunity {
		ids = append(ids, sc.ChannelID(scenario.Channel{Community: 0, Index: i}))
	}
	ep := sc.Endpoint(0)
	conn, err := relayclient.Connect(context.Background(), relayclient.Config{
		Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr},
		Keys:   sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var log kindLog
	if _, err := conn.Subscribe([]relayclient.Filter{{Kinds: []int{nostr.KindCreateGroup, nostr.KindPutUser, nostr.KindStreamMessage},
		Tags: map[string][]string{"h": ids}, LimitZero: true}},
		relayclient.SubOptions{OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) { log.add(ev.Kind) }}); err != nil {
		t.Fatal(err)
	}

	var sink relayclienttest.CollectSink
	var pmu sync.Mutex
	var phases []string
	last := map[string]Progress{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Seed(ctx, sc, Options{Operator: r.OperatorKeys(), Sink: &sink, Progress: func(p Progress) {
		pmu.Lock()
		defer pmu.Unlock()
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		last[p.Phase] = p
	}})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if !res.OK() {
		t.Fatalf("result not OK: %+v", res)
	}
	if got := []string{res.Communities[0].Status, res.Communities[1].Status}; !slices.Equal(got, []string{"existed", "created"}) {
		t.Fatalf("community statuses %v", got)
	}
	nch := sc.Shape.Communities * sc.Shape.ChannelsPerCommunity
	if res.Channels != (Counts{Planned: nch, Created: nch}) {
		t.Fatalf("channels %+v", res.Channels)
	}
	wantPosts := nch*(4+2*(1+3)) + 1 + 5
	if res.Posts != (Counts{Planned: wantPosts, Created: wantPosts}) {
		t.Fatalf("posts %+v, want %d created", res.Posts, wantPosts)
	}
	if !slices.Equal(phases, []string{PhaseCommunities, PhaseChannels, PhaseMembers, PhasePosts}) {
		t.Fatalf("phases %v", phases)
	}
	for ph, p := range last {
		if p.Done != p.Total {
			t.Errorf("phase %s ended at %d/%d", ph, p.Done, p.Total)
		}
	}

	// Membership: every planned member of every channel, nobody else but the owner.
	planned := 0
	for _, ch := range sc.Channels() {
		have := members(t, sc, ch)
		want := sc.ChannelMemberList(ch)
		planned += len(want)
		for _, g := range want {
			if !have[sc.Keys(g).PubKey()] {
				t.Errorf("channel %v lacks member %d", ch, g)
			}
		}
		if len(have) != len(want)+1 || !have[sc.OwnerKeys(ch.Community).PubKey()] {
			t.Errorf("channel %v has %d members, want %d and the owner", ch, len(have), len(want))
		}
	}
	if res.Members != (Counts{Planned: planned, Created: planned}) {
		t.Fatalf("members %+v, want %d", res.Members, planned)
	}
	hot := sc.ChannelMemberList(sc.HotThreadChannel())
	for _, i := range []int{0, 1} {
		if !slices.Contains(hot, sc.GlobalIndex(scenario.KindHotAuthor, i)) {
			t.Fatalf("hot author %d is not a member of the hot channel", i)
		}
	}

	// Posts: by members, with history, chains and the hot thread.
	for _, ch := range sc.Channels() {
		evs := posts(t, sc, ch)
		mem := map[string]bool{}
		for _, g := range sc.ChannelMemberList(ch) {
			mem[sc.Keys(g).PubKey()] = true
		}
		byContent := map[string]nostr.Event{}
		for _, e := range evs {
			if !mem[e.PubKey] {
				t.Errorf("channel %v: post %q by a non-member", ch, e.Content)
			}
			if _, dup := byContent[e.Content]; dup {
				t.Errorf("channel %v: %q posted twice", ch, e.Content)
			}
			byContent[e.Content] = e
		}
		for j := range 4 {
			if _, ok := byContent[HistoryContent(ch, j)]; !ok {
				t.Errorf("channel %v lacks history %d", ch, j)
			}
		}
		for th := range 2 {
			root, ok := byContent[scenario.ThreadRootContent(sc.RunID, ch, th)]
			if !ok {
				t.Fatalf("channel %v lacks thread %d", ch, th)
			}
			parent := root.ID
			for k := 1; k <= 3; k++ {
				e, ok := byContent[ReplyContent(ch, th, k)]
				if !ok {
					t.Fatalf("channel %v thread %d lacks reply %d", ch, th, k)
				}
				var rootTag, replyTag string
				for _, tg := range e.Tags {
					if len(tg) >= 4 && tg[0] == "e" {
						switch tg[3] {
						case "root":
							rootTag = tg[1]
						case "reply":
							replyTag = tg[1]
						}
					}
				}
				if replyTag != parent || (k > 1 && rootTag != root.ID) || (k == 1 && rootTag != "") {
					t.Errorf("channel %v thread %d reply %d: root %q reply %q, want parent %s", ch, th, k, rootTag, replyTag, parent)
				}
				parent = e.ID
			}
		}
		want := 4 + 2*4
		if ch == sc.HotThreadChannel() {
			want += 6
			root, ok := byContent[scenario.HotRootContent(sc.RunID)]
			if !ok {
				t.Fatal("no hot root")
			}
			if a := sc.GlobalIndex(scenario.KindHotAuthor, 0); root.PubKey != sc.Keys(a).PubKey() {
				t.Errorf("hot root by %s, want hot author 0", root.PubKey)
			}
			for k := 1; k <= 5; k++ {
				e, ok := byContent[HotReplyContent(k)]
				if !ok || len(e.Tags) != 2 || e.Tags[1][0] != "e" || e.Tags[1][1] != root.ID || e.Tags[1][3] != "reply" {
					t.Errorf("hot reply %d: %v", k, e.Tags)
				}
			}
		}
		if len(evs) != want {
			t.Errorf("channel %v holds %d posts, want %d", ch, len(evs), want)
		}
	}

	// Order as the relay fanned them out: every 9007 before any 9000,
	// every 9000 before any post (community 0).
	posts0 := 3*(4+2*4) + 6
	var ks []int
	waitfor.Within(5*time.Second, func() bool {
		ks = log.snapshot()
		return countKind(ks, nostr.KindStreamMessage) >= posts0
	})
	if countKind(ks, nostr.KindCreateGroup) != 3 || countKind(ks, nostr.KindPutUser) < 3 || countKind(ks, nostr.KindStreamMessage) != posts0 {
		t.Fatalf("subscription saw 9007×%d 9000×%d 9×%d", countKind(ks, 9007), countKind(ks, 9000), countKind(ks, 9))
	}
	lastCreate, firstAdd := -1, len(ks)
	lastAdd, firstPost := -1, len(ks)
	for i, k := range ks {
		switch k {
		case nostr.KindCreateGroup:
			lastCreate = i
		case nostr.KindPutUser:
			firstAdd, lastAdd = min(firstAdd, i), i
		case nostr.KindStreamMessage:
			firstPost = min(firstPost, i)
		}
	}
	if lastCreate > firstAdd || lastAdd > firstPost {
		t.Fatalf("order at the relay: %v", ks)
	}

	// Every request was recorded under the seed's own op names.
	if sink.Count(OpMembers, relayclient.OutcomeOK) != res.MemberEvents || sink.Count(OpChannel, relayclient.OutcomeOK) != nch {
		t.Errorf("sink: %d member events (result %d), %d channels", sink.Count(OpMembers, relayclient.OutcomeOK), res.MemberEvents, sink.Count(OpChannel, relayclient.OutcomeOK))
	}
	if n := sink.Count(OpHistory, relayclient.OutcomeOK) + sink.Count(OpThread, relayclient.OutcomeOK) + sink.Count(OpHot, relayclient.OutcomeOK); n != wantPosts {
		t.Errorf("sink: %d posts, want %d", n, wantPosts)
	}
}

// A rerun finds everything: it adds nobody, sends no kind-9000 and posts
// nothing again.
func TestSeedRerunAddsNothing(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "rerun", privateShape)
	first, err := runSeed(t, r, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[scenario.Channel]int{}
	for _, ch := range sc.Channels() {
		before[ch] = len(posts(t, sc, ch))
	}
	var sink relayclienttest.CollectSink
	second, err := runSeed(t, r, sc, &sink)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if second.Members.Created != 0 || second.MemberEvents != 0 || second.Members.Existing != first.Members.Planned {
		t.Errorf("rerun members %+v, %d events", second.Members, second.MemberEvents)
	}
	if second.Posts.Created != 0 || second.Posts.Existing != first.Posts.Planned {
		t.Errorf("rerun posts %+v", second.Posts)
	}
	if second.Channels.Existing != first.Channels.Planned {
		t.Errorf("rerun channels %+v", second.Channels)
	}
	for _, c := range second.Communities {
		if c.Status != "existed" {
			t.Errorf("rerun community %d: %s", c.Index, c.Status)
		}
	}
	if n := len(sink.Op(OpMembers)) + len(sink.Op(OpHistory)) + len(sink.Op(OpThread)) + len(sink.Op(OpHot)); n != 0 {
		t.Errorf("rerun sent %d member events or posts", n)
	}
	for _, ch := range sc.Channels() {
		if n := len(posts(t, sc, ch)); n != before[ch] {
			t.Errorf("channel %v: %d posts after the rerun, %d before", ch, n, before[ch])
		}
	}
	// The relay's "duplicate: channel already exists" to the rerun's 9007s
	// is what an idempotent seed wants: recorded as successes, not errors
	// (issue 47 item 1: a re-seed made a clean run show failed operations).
	if n := len(sink.Op(OpChannel)); n != first.Channels.Planned {
		t.Errorf("rerun recorded %d channel operations, want %d", n, first.Channels.Planned)
	}
	for _, r := range sink.Results() {
		if r.Outcome != relayclient.OutcomeOK {
			t.Errorf("rerun %s: %s %q", r.Op, r.Outcome, r.Error)
		}
	}
}

// A rerun after a partial seed completes it: a thread chain resumes after
// its last reply and history that is there is not posted again.
func TestSeedRerunCompletesPartial(t *testing.T) {
	shape := strings.Replace(privateShape, "thread_depth = 3", "thread_depth = 6", 1)
	r2 := startRelay(t, nil)
	small := scenarioFor(t, r2, "partial", strings.Replace(strings.Replace(privateShape, "history_messages_per_channel = 4", "history_messages_per_channel = 2", 1), "thread_depth = 3", "thread_depth = 2", 1))
	if _, err := runSeed(t, r2, small, nil); err != nil {
		t.Fatal(err)
	}
	full := scenarioFor(t, r2, "partial", shape)
	res, err := runSeed(t, r2, full, nil)
	if err != nil {
		t.Fatalf("completing seed: %v", err)
	}
	nch := 6
	wantExisting := nch*(2+2*(1+2)) + 6
	if res.Posts.Existing != wantExisting || res.Posts.Created != res.Posts.Planned-wantExisting {
		t.Fatalf("posts %+v, want %d existing", res.Posts, wantExisting)
	}
	for _, ch := range full.Channels() {
		evs := posts(t, full, ch)
		want := 4 + 2*7
		if ch == full.HotThreadChannel() {
			want += 6
		}
		if len(evs) != want {
			t.Errorf("channel %v: %d posts, want %d", ch, len(evs), want)
		}
		// The chain continues from reply 2 (seeded first) to reply 3.
		by := map[string]nostr.Event{}
		for _, e := range evs {
			by[e.Content] = e
		}
		r2e, r3e := by[ReplyContent(ch, 0, 2)], by[ReplyContent(ch, 0, 3)]
		if r3e.ID == "" || r3e.Tags[len(r3e.Tags)-1][1] != r2e.ID {
			t.Errorf("channel %v: reply 3 does not reply to the earlier reply 2", ch)
		}
	}
}

// A relay that applies only the first p tag of a kind-9000 (Buzz:
// side_effects.rs extract_p_tag) and one that applies every p tag both end
// with every member: the seed reads each member list back and adds whoever
// is missing one per event, and says which relay it found.
func TestSeedMembersVerifiedOnBothKindsOfRelay(t *testing.T) {
	const src = `
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 1
thread_roots_per_channel = 0
private_channels = true
seed_concurrency = 3
[population]
humans = 230
agents = 20
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`
	for _, c := range []struct {
		every      bool
		events     int
		applied    string
		maxPerEvnt int
	}{
		{false, 250, MemberTagsFirst, 100}, // 3 chunk events (one member each), then 247 single ones
		{true, 3, MemberTagsEvery, 100},    // chunks of 100, 100 and 50
	} {
		t.Run(c.applied, func(t *testing.T) {
			r := startRelay(t, nil)
			r.Faults().ApplyEveryMemberTag(c.every)
			sc := scenarioFor(t, r, "chunks", src)
			res, err := runSeed(t, r, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			ch := scenario.Channel{}
			if res.MemberEvents != c.events || res.Members.Created != 250 || res.MemberTagsApplied != c.applied {
				t.Fatalf("%d member events, members %+v, tags applied %q", res.MemberEvents, res.Members, res.MemberTagsApplied)
			}
			if n := len(members(t, sc, ch)); n != 251 {
				t.Fatalf("%d members on the relay, want 250 and the owner", n)
			}
			// A rerun adds nobody new.
			again, err := runSeed(t, r, sc, nil)
			if err != nil || again.MemberEvents != 0 || again.Members.Existing != 250 {
				t.Fatalf("rerun: %v, %d member events, members %+v", err, again.MemberEvents, again.Members)
			}
		})
	}
}

// A member whose kind-9000 the relay acknowledged but who is not on the
// member list afterwards fails the seed, named, and nothing is posted.
func TestSeedAcknowledgedButMissingMemberFails(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "ignored", privateShape)
	g := sc.GlobalIndex(scenario.KindHuman, 3)
	pk := sc.Keys(g).PubKey()
	r.Faults().IgnoreMembers(pk)
	res, err := runSeed(t, r, sc, nil)
	if err == nil || res.OK() || res.Members.Refused == 0 {
		t.Fatalf("seed succeeded with a member the relay never added: %v %+v", err, res.Members)
	}
	mustContain(t, err.Error(), "human 3", pk, "not on the channel's member list")
	if res.Posts.Created != 0 {
		t.Fatalf("%d posts after a failed members phase", res.Posts.Created)
	}
}

// A member the relay refuses fails the seed, is named, and nothing is posted.
func TestSeedRefusedMemberFails(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "refused", privateShape)
	g := sc.GlobalIndex(scenario.KindHuman, 3)
	pk := sc.Keys(g).PubKey()
	r.Faults().RefuseMembers("restricted: member refused by test", pk)
	res, err := runSeed(t, r, sc, nil)
	if err == nil || res.OK() || res.Success || res.Error == "" {
		t.Fatal("seed succeeded with a refused member")
	}
	mustContain(t, err.Error(), "human 3", pk, "restricted: member refused by test")
	inChannels := len(sc.MemberChannels(g))
	if res.Members.Refused != inChannels {
		t.Fatalf("members %+v, want %d refused", res.Members, inChannels)
	}
	for _, rf := range res.Refusals {
		if rf.Phase != PhaseMembers || rf.Pubkey != pk || rf.What != "member human 3" {
			t.Errorf("unexpected refusal %+v", rf)
		}
	}
	// Everyone else was added; the refused member was not.
	if res.Members.Created != res.Members.Planned-inChannels {
		t.Errorf("members %+v", res.Members)
	}
	for _, ch := range sc.MemberChannels(g) {
		if members(t, sc, ch)[pk] {
			t.Errorf("refused member is in %v", ch)
		}
	}
	if res.Posts.Created != 0 || res.Posts.Skipped != res.Posts.Planned {
		t.Fatalf("posts %+v after a refused member", res.Posts)
	}
	for _, ch := range sc.Channels() {
		if n := len(posts(t, sc, ch)); n != 0 {
			t.Fatalf("channel %v has %d posts", ch, n)
		}
	}
}

// A host another owner holds fails the seed naming the host, before any
// channel is created, and is left alone.
func TestSeedHostOfAnotherOwnerFails(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "taken", privateShape)
	op := operatorHTTP(t, r, r.OperatorKeys())
	stranger, _ := nostr.GenerateKeys()
	host := sc.CommunityHost(1)
	if _, res := op.ProvisionCommunity(context.Background(), host, stranger.PubKey(), true, relayclient.CallOptions{}); res.Outcome != relayclient.OutcomeOK {
		t.Fatal(res.Error)
	}
	res, err := runSeed(t, r, sc, nil)
	if err == nil || res.OK() {
		t.Fatal("seed succeeded on a host another owner holds")
	}
	mustContain(t, err.Error(), host, "does not own it")
	if res.Communities[1].Status != "failed" || res.Channels.Created != 0 || res.Channels.Skipped != res.Channels.Planned {
		t.Fatalf("communities %+v channels %+v", res.Communities, res.Channels)
	}
	list, lr := op.ListCommunities(context.Background(), stranger.PubKey(), relayclient.CallOptions{})
	if lr.Outcome != relayclient.OutcomeOK || len(list.Communities) != 1 || archived(list.Communities[0].ArchivedAt) {
		t.Fatalf("the stranger's community changed: %+v %s", list, lr.Error)
	}
}

// Open channels: no kind-9000 at all, posts by the channels' members; a
// scenario without a host template needs no operator key.
func TestSeedOpenWithoutTemplate(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc, err := scenario.Parse("open.toml", []byte(fmt.Sprintf(`run_id = "open"
[target]
ws_url = %q
http_url = %q
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 3
thread_roots_per_channel = 1
thread_depth = 2
[population]
humans = 4
agents = 1
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`, u.WS, u.HTTP)))
	if err != nil {
		t.Fatal(err)
	}
	var sink relayclienttest.CollectSink
	res, err := Seed(context.Background(), sc, Options{Sink: &sink})
	if err != nil {
		t.Fatal(err)
	}
	if res.Communities[0].Status != "unmanaged" || res.Members.Planned != 0 || res.MemberEvents != 0 || len(sink.Op(OpMembers)) != 0 {
		t.Fatalf("result %+v", res)
	}
	if res.Posts.Created != 2*(3+3) || !res.OK() {
		t.Fatalf("posts %+v", res.Posts)
	}
	if len(sink.Op(OpProvision)) != 0 {
		t.Fatal("provisioned without a host template")
	}
}

// The embedded relay cannot be seeded from outside a run.
func TestSeedEmbeddedRefused(t *testing.T) {
	sc, err := scenario.Parse("e.toml", []byte("run_id = \"x\"\n[[ramp]]\nusers = 1\nhold_secs = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Seed(context.Background(), sc, Options{}); !errors.Is(err, ErrEmbedded) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Teardown(context.Background(), sc, TeardownOptions{}); !errors.Is(err, ErrEmbedded) {
		t.Fatalf("teardown err = %v", err)
	}
}

// A refused post is reported with its reason and fails the seed; a 5xx is
// retried and does not.
func TestSeedPostRefusalsAndRetries(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) { c.MaxContentBytes = 25 })
	// "history 0 of channel 0/0" fits in 25 bytes; thread roots do not.
	sc := scenarioFor(t, r, "refuse", `
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 2
thread_roots_per_channel = 1
thread_depth = 2
[population]
humans = 2
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`)
	r.Faults().FailHTTPOnce("/events", 503)
	var sink relayclienttest.CollectSink
	res, err := runSeed(t, r, sc, &sink)
	if err == nil || res.OK() {
		t.Fatal("seed with refused posts succeeded")
	}
	if res.Channels.Created != 1 {
		t.Fatalf("the 503 was not retried: channels %+v", res.Channels)
	}
	if res.Posts.Created != 2 || res.Posts.Refused != 1 || res.Posts.Skipped != 2 {
		t.Fatalf("posts %+v", res.Posts)
	}
	if len(res.Refusals) != 1 || res.Refusals[0].What != "thread 0 root" || !strings.Contains(res.Refusals[0].Reason, "content exceeds maximum size") {
		t.Fatalf("refusals %+v", res.Refusals)
	}
	mustContain(t, err.Error(), "did not accept 3 of 5 planned posts", "thread 0 root")
	if sink.Count(OpChannel, relayclient.OutcomeError) != 1 {
		t.Errorf("the failed attempt was not recorded: %v", sink.Op(OpChannel))
	}
}

// Cancelling stops the seed with the context's error.
func TestSeedCancelled(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) {})
	sc := scenarioFor(t, r, "cancel", privateShape)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Seed(ctx, sc, Options{Operator: r.OperatorKeys()})
	if !errors.Is(err, context.Canceled) || res == nil || res.OK() {
		t.Fatalf("err = %v", err)
	}
}

// A deletion request id is a stable, well-formed UUIDv8 per run and host.
func TestDeletionRequestID(t *testing.T) {
	a := DeletionRequestID("r1", "c0.r1.test")
	if a != DeletionRequestID("r1", "c0.r1.test") || a == DeletionRequestID("r2", "c0.r1.test") || a == DeletionRequestID("r1", "c1.r1.test") {
		t.Fatal("request ids are not per run and host")
	}
	if len(a) != 36 || a[14] != '8' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Fatalf("not a UUIDv8: %s", a)
	}
}
