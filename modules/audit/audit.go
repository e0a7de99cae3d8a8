// Package audit reads back, after a run, what the relay said during it
// (issue 26): the acknowledged events (the durability audit), the ones it
// refused or never answered, and whether it still serves (the post-run
// sweep). The logs are filled while the run goes (the sinks call Add and
// Record); the reads go through the relay's normal paths as the run's own
// identities. Their outcomes are report types, judged by report's checks.
package audit

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Config is what the read-backs need: the scenario with the run's target,
// the instance's shard, its keys and an HTTP transport; Err set when any
// of them could not be had (every read-back then says so, none is made).
type Config struct {
	Scenario  *scenario.Scenario
	Shard     scenario.Shard
	Keys      *scenario.KeyMemo
	Transport http.RoundTripper
	Err       error
}

const (
	maxMissingIDs = 20
	auditChunk    = 500 // ids per read: Buzz's page limit allows more, one page is enough
)

// The durability audit (issue 26): nothing the relay acknowledged is lost.
// Every event a client got an acknowledgement for during the run (a
// WebSocket OK true, an HTTP /events accepted: relayclient.Result.Event)
// is kept — its id, author and channel, or a uniform sample of them
// ([verify] sample) — and read back after the run through the relay's
// normal read paths: HTTP /query as its author, and a WebSocket REQ by ids
// as another member of its channel. Only stored kinds in a channel are
// audited: ephemeral events are not stored, and replaceable or addressable
// ones may be replaced by a later one in the run.

// ackRec is one acknowledged event as the audit reads it.
type ackRec struct {
	id, author, channel string
}

// acked is how the log keeps one, densely: its id as 32 bytes, not a
// slice of the string it shares with the signature (which pinned all 192
// bytes for as long as the record lived: the 2½-hour soak kept 12,307 of
// them, docs/benchmarks.md), the author's pubkey shared with the keys, the
// channel interned (BenchmarkAckLogRetained: 251 bytes a record, then 123
// with the id copied as a string, 73 as bytes: three runs, 6 Dec 2026).
type acked struct {
	id              [32]byte
	author, channel string
}

// AckLog keeps the acknowledged events: all of them up to its capacity,
// then a uniform sample (reservoir sampling, seeded: the same run keeps
// the same sample).
type AckLog struct {
	mu       sync.Mutex
	channels map[string]string // interned channel ids
	cap      int
	seen     int64
	recs     []acked
	rng      *rand.Rand
}

func NewAckLog(capacity int) *AckLog {
	if capacity <= 0 {
		return nil
	}
	return &AckLog{cap: capacity, rng: rand.New(rand.NewPCG(1, 2))}
}

// auditable: a regular (stored, never replaced) kind with a channel.
func auditable(ev *nostr.Event) (string, bool) {
	k := ev.Kind
	regular := k == 1 || k == 2 || (k >= 4 && k < 45) || (k >= 1000 && k < 10000)
	if !regular || k == nostr.KindDeletion {
		return "", false
	}
	h := ev.TagValue("h")
	return h, h != ""
}

func (a *AckLog) Add(ev *nostr.Event) {
	if a == nil || ev == nil {
		return
	}
	ch, ok := auditable(ev)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.compact(ev, ch)
	if !ok {
		return // not an id this client signed: nothing to read back by
	}
	a.seen++
	if len(a.recs) < a.cap {
		a.recs = append(a.recs, rec)
		return
	}
	if j := a.rng.Int64N(a.seen); j < int64(a.cap) {
		a.recs[j] = rec
	}
}

// compact is ev's record, pinning nothing of the event (a.mu held).
func (a *AckLog) compact(ev *nostr.Event, ch string) (acked, bool) {
	if a.channels == nil {
		a.channels = map[string]string{}
	}
	c, ok := a.channels[ch]
	if !ok {
		c = strings.Clone(ch)
		a.channels[c] = c
	}
	r := acked{author: ev.PubKey, channel: c}
	if len(ev.ID) != 2*len(r.id) {
		return r, false
	}
	if _, err := hex.Decode(r.id[:], []byte(ev.ID)); err != nil {
		return r, false
	}
	return r, true
}

// Seen is how many auditable events were acknowledged so far.
func (a *AckLog) Seen() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen
}

func (a *AckLog) snapshot() (int64, []ackRec) {
	if a == nil {
		return 0, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ackRec, len(a.recs))
	for i, r := range a.recs {
		out[i] = ackRec{id: hex.EncodeToString(r.id[:]), author: r.author, channel: r.channel}
	}
	return a.seen, out
}

// Events the relay never acknowledged (issue 26 item 4's other half): a
// publish refused (OK false, an HTTP error) or never answered (no OK in
// time, the connection lost, the run's end) — throttles aside, which are
// the relay's quotas and retried — whose event still reaches readers. A
// refused event that is delivered or stored is a relay that says one thing
// to the author and another to the channel; an unanswered one is an
// acknowledgement lost under load (the author saw a failure for a message
// others read). Two pieces of evidence: deliveries of such an event that
// arrive after its publish settled (a delivery before the refusal is not
// seen: the id is only watched from then), and the relay's own answer
// after the run (a REQ by ids as a member of the channel, as the
// durability audit reads).

// maxUnacked bounds the never-acknowledged events kept (ids, author,
// channel); past it they are counted only.
const maxUnacked = 10000

type unackedRec struct {
	ackRec
	refused   bool
	delivered atomic.Int64
}

// UnackedLog keeps the never-acknowledged events of a run.
type UnackedLog struct {
	n     atomic.Int64 // kept, for the deliveries' fast path
	mu    sync.RWMutex
	recs  map[string]*unackedRec
	total int64 // never acknowledged, kept or not
}

func NewUnackedLog() *UnackedLog { return &UnackedLog{recs: map[string]*unackedRec{}} }

// record takes a publish's Result: an acknowledgement clears its id (a
// retried publish of the same event), a refusal or no answer keeps it.
func (u *UnackedLog) Record(r *relayclient.Result) {
	if u == nil || r.Event == nil || r.Outcome == relayclient.OutcomeThrottled {
		return
	}
	if r.Outcome == relayclient.OutcomeOK {
		if u.n.Load() == 0 {
			return
		}
		u.mu.Lock()
		if _, ok := u.recs[r.Event.ID]; ok {
			delete(u.recs, r.Event.ID)
			u.total--
			u.n.Add(-1)
		}
		u.mu.Unlock()
		return
	}
	ch, ok := auditable(r.Event)
	if !ok {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if rec, ok := u.recs[r.Event.ID]; ok {
		rec.refused = rec.refused || r.Refused
		return
	}
	u.total++
	if len(u.recs) < maxUnacked {
		rec := &unackedRec{ackRec: ackRec{id: strings.Clone(r.Event.ID), author: r.Event.PubKey, channel: strings.Clone(ch)}, refused: r.Refused}
		u.recs[rec.id] = rec
		u.n.Add(1)
	}
}

// watching says whether any delivery may be of a never-acknowledged event.
func (u *UnackedLog) Watching() bool { return u != nil && u.n.Load() > 0 }

// delivered counts a delivery of the event id (hex) if it is one.
func (u *UnackedLog) Delivered(id []byte) {
	u.mu.RLock()
	rec := u.recs[string(id)] // no allocation: the conversion is the index
	u.mu.RUnlock()
	if rec != nil {
		rec.delivered.Add(1)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Durability reads back the acknowledged events (see the file's
// comment). It runs once, before the embedded relay stops.
func Durability(ctx context.Context, c Config, acks *AckLog) *report.DurabilityReport {
	if acks == nil {
		return nil
	}
	seen, recs := acks.snapshot()
	start := time.Now()
	rep := &report.DurabilityReport{Acknowledged: seen, Checked: len(recs)}
	if len(recs) == 0 {
		return rep
	}
	if c.Err != nil {
		rep.Unverified, rep.FirstError = len(recs), c.Err.Error()
		return rep
	}
	sc, pool := c.Scenario, c.Transport
	ctx, cancel := context.WithTimeout(ctx, scenario.Secs(sc.Verify.TimeoutSecs))
	defer cancel()

	// Who is who: channel ids to channels, pubkeys to this shard's humans.
	chans := map[string]scenario.Channel{}
	for _, ch := range sc.Channels() {
		chans[sc.ChannelID(ch)] = ch
	}
	humans := map[string]int{}
	for _, k := range []scenario.Kind{scenario.KindHuman, scenario.KindDesktop} {
		for _, g := range sc.Clients(k, sc.PeakUsers(), c.Shard) {
			humans[c.Keys.PubKey(g)] = g
		}
	}

	byChan := map[string][]ackRec{}
	for _, r := range recs {
		byChan[r.channel] = append(byChan[r.channel], r)
	}
	foundA, foundM := map[string]bool{}, map[string]bool{}
	readA, readM := map[string]bool{}, map[string]bool{} // ids a path answered for
	var mu sync.Mutex
	fail := func(err string) {
		mu.Lock()
		rep.ReadErrors++
		if rep.FirstError == "" {
			rep.FirstError = err
		}
		mu.Unlock()
	}
	sink := relayclient.NopSink{} // the audit's reads are not the run's load
	names := make([]string, 0, len(byChan))
	for ch := range byChan {
		names = append(names, ch)
	}
	sort.Strings(names)
	for _, chID := range names {
		ch, ok := chans[chID]
		if !ok {
			continue // not a scenario channel (a low-level script's own): unverified
		}
		tgt := preflight.CommunityTarget(sc, ch.Community)
		evs := byChan[chID]
		member := readerOf(sc, ch)
		// As the author (a human of this shard; others' events by the
		// member), over HTTP.
		byAuthor := map[int][]string{}
		for _, r := range evs {
			g, ok := humans[r.author]
			if !ok {
				g = member
			}
			if g >= 0 {
				byAuthor[g] = append(byAuthor[g], r.id)
			}
		}
		for g, ids := range byAuthor {
			h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: c.Keys.Keys(g), Sink: sink, Transport: pool})
			if err != nil {
				fail(err.Error())
				continue
			}
			for i := 0; i < len(ids); i += auditChunk {
				chunk := ids[i:min(i+auditChunk, len(ids))]
				got, res := h.Query(ctx, []relayclient.Filter{relayclient.Strong(relayclient.Filter{IDs: chunk, Tags: map[string][]string{"h": {chID}}, Limit: len(chunk)})},
					relayclient.CallOptions{Op: "verify_author_read"})
				if res.Outcome != relayclient.OutcomeOK {
					fail("author read over HTTP: " + res.Error)
					continue
				}
				for _, id := range chunk {
					readA[id] = true
				}
				for i := range got {
					foundA[got[i].ID] = true
				}
			}
		}
		// As a member, over a WebSocket REQ by ids.
		if member < 0 {
			fail("channel " + chID + " has no human member to read as")
			continue
		}
		read, found, err := memberRead(ctx, c, tgt, member, chID, evs)
		if err != "" {
			fail(err)
		}
		for id := range read {
			readM[id] = true
		}
		for id := range found {
			foundM[id] = true
		}
	}
	for _, r := range recs {
		a, m := foundA[r.id], foundM[r.id]
		if a {
			rep.FoundAuthor++
		}
		if m {
			rep.FoundMember++
		}
		switch {
		case (readA[r.id] && !a) || (readM[r.id] && !m):
			rep.Missing++
			if len(rep.MissingIDs) < maxMissingIDs {
				rep.MissingIDs = append(rep.MissingIDs, r.id)
			}
		case !readA[r.id] || !readM[r.id]:
			rep.Unverified++ // a path could not read it: not a pass
		}
	}
	rep.Secs = math.Round(time.Since(start).Seconds()*1000) / 1000
	return rep
}

// readerOf is a member to read ch as: its first human member, or -1.
func readerOf(sc *scenario.Scenario, ch scenario.Channel) int {
	for g := range sc.ChannelMembersAt(ch, sc.PeakUsers()) {
		if c, ok := sc.Client(g); ok && c.Kind.IsHuman() {
			return g
		}
	}
	return -1
}

// memberRead reads recs (events of channel chID) back as member g over a
// WebSocket REQ by ids, a page at a time: read are the ids a page
// answered for, found those it returned; err is the first failure.
func memberRead(ctx context.Context, c Config, tgt relayclient.Target, g int, chID string, recs []ackRec) (read, found map[string]bool, err string) {
	read, found = map[string]bool{}, map[string]bool{}
	conn, cerr := relayclient.Connect(ctx, relayclient.Config{Target: tgt, Keys: c.Keys.Keys(g), Sink: relayclient.NopSink{}})
	if cerr != nil {
		return read, found, "member read over WebSocket: " + cerr.Error()
	}
	defer conn.Close()
	for i := 0; i < len(recs); i += auditChunk {
		part := recs[i:min(i+auditChunk, len(recs))]
		ids := make([]string, len(part))
		for j, r := range part {
			ids[j] = r.id
		}
		var mu sync.Mutex
		var got []string
		_, res, _ := conn.SubscribeEOSE(ctx, []relayclient.Filter{{IDs: ids, Tags: map[string][]string{"h": {chID}}, Limit: len(ids)}},
			relayclient.SubOptions{Op: "verify_member_read", OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) {
				mu.Lock()
				got = append(got, ev.ID)
				mu.Unlock()
			}})
		if res.Outcome != relayclient.OutcomeOK {
			if err == "" {
				err = "member read over WebSocket: " + res.Error
			}
			continue
		}
		for _, id := range ids {
			read[id] = true
		}
		mu.Lock()
		for _, id := range got {
			found[id] = true
		}
		mu.Unlock()
	}
	return read, found, err
}

func Sweep(ctx context.Context, c Config) *report.SweepReport {
	if c.Err != nil {
		return &report.SweepReport{Error: c.Err.Error()}
	}
	sc, pool := c.Scenario, c.Transport
	hs := sc.Clients(scenario.KindHuman, sc.PeakUsers(), c.Shard)
	if len(hs) == 0 {
		hs = sc.Clients(scenario.KindDesktop, sc.PeakUsers(), c.Shard)
	}
	if len(hs) == 0 {
		return nil // no human to sweep as
	}
	g := hs[0]
	keys := c.Keys.Keys(g)
	if _, err := preflight.Check(ctx, sc, preflight.Target(sc, false), keys, false, pool); err != nil {
		return &report.SweepReport{Error: err.Error()}
	}
	info, _ := sc.Client(g)
	chans := sc.MemberChannels(g)
	if len(chans) == 0 {
		return &report.SweepReport{OK: true}
	}
	tgt := preflight.CommunityTarget(sc, info.Community)
	limit := time.Duration(sc.Abort.MaxP99Ms * float64(time.Millisecond))
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: keys, Transport: pool, Timeout: max(limit, 10*time.Second)})
	if err != nil {
		return &report.SweepReport{Error: err.Error()}
	}
	_, res := h.Query(ctx, []relayclient.Filter{relayclient.Strong(relayclient.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {sc.ChannelID(chans[0])}}, Limit: 20})},
		relayclient.CallOptions{Op: "sweep_read"})
	rep := &report.SweepReport{ReadMs: math.Round(float64(res.Duration)/float64(time.Microsecond)) / 1000}
	switch {
	case res.Outcome != relayclient.OutcomeOK:
		rep.Error = "channel read: " + res.Error
	case res.Duration > limit:
		rep.OK = true
		rep.Slow = fmt.Sprintf("the channel read took %.1f ms, above max_p99_ms %g", float64(res.Duration)/float64(time.Millisecond), sc.Abort.MaxP99Ms)
	default:
		rep.OK = true
	}
	return rep
}

// Unacked reads the never-acknowledged events back as a member of
// their channel, after the run.
func Unacked(ctx context.Context, c Config, u *UnackedLog) *report.UnackedReport {
	if u == nil {
		return nil
	}
	u.mu.RLock()
	rep := &report.UnackedReport{Total: u.total}
	recs := make([]*unackedRec, 0, len(u.recs))
	for _, r := range u.recs {
		recs = append(recs, r)
	}
	u.mu.RUnlock()
	if len(recs) == 0 {
		return rep
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].id < recs[j].id })
	byChan := map[string][]ackRec{}
	for _, r := range recs {
		byChan[r.channel] = append(byChan[r.channel], r.ackRec)
	}
	stored := map[string]bool{}
	if sc := c.Scenario; c.Err != nil {
		rep.FirstError = c.Err.Error()
	} else {
		chans := map[string]int{}
		for i, ch := range sc.Channels() {
			chans[sc.ChannelID(ch)] = i
		}
		all := sc.Channels()
		for chID, evs := range byChan {
			i, ok := chans[chID]
			if !ok {
				continue
			}
			member := readerOf(sc, all[i])
			if member < 0 {
				continue
			}
			read, found, e := memberRead(ctx, c, preflight.CommunityTarget(sc, all[i].Community), member, chID, evs)
			if e != "" && rep.FirstError == "" {
				rep.FirstError = e
			}
			rep.Checked += len(read)
			for id := range found {
				stored[id] = true
			}
		}
	}
	for _, r := range recs {
		d, s := r.delivered.Load() > 0, stored[r.id]
		if r.refused {
			rep.Refused++
			rep.DeliveredRefused += b2i(d)
			rep.StoredRefused += b2i(s)
			if (d || s) && len(rep.RefusedIDs) < maxMissingIDs {
				rep.RefusedIDs = append(rep.RefusedIDs, r.id)
			}
		} else {
			rep.Unanswered++
			rep.DeliveredUnanswered += b2i(d)
			rep.StoredUnanswered += b2i(s)
		}
	}
	return rep
}
