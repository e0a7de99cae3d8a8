package extension

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
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

// ackRec is one acknowledged event, compactly: the strings are the
// event's own (shared, not copied).
type ackRec struct {
	id, author, channel string
}

// ackLog keeps the acknowledged events: all of them up to its capacity,
// then a uniform sample (reservoir sampling, seeded: the same run keeps
// the same sample).
type ackLog struct {
	mu   sync.Mutex
	cap  int
	seen int64
	recs []ackRec
	rng  *rand.Rand
}

func newAckLog(capacity int) *ackLog {
	if capacity <= 0 {
		return nil
	}
	return &ackLog{cap: capacity, rng: rand.New(rand.NewPCG(1, 2))}
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

func (a *ackLog) add(ev *nostr.Event) {
	if a == nil || ev == nil {
		return
	}
	ch, ok := auditable(ev)
	if !ok {
		return
	}
	rec := ackRec{id: ev.ID, author: ev.PubKey, channel: ch}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen++
	if len(a.recs) < a.cap {
		a.recs = append(a.recs, rec)
		return
	}
	if j := a.rng.Int64N(a.seen); j < int64(a.cap) {
		a.recs[j] = rec
	}
}

func (a *ackLog) snapshot() (int64, []ackRec) {
	if a == nil {
		return 0, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen, append([]ackRec(nil), a.recs...)
}

// DurabilityReport is the audit's outcome.
type DurabilityReport struct {
	Acknowledged int64 `json:"acknowledged"` // auditable events acknowledged in the run
	Checked      int   `json:"checked"`      // of them, read back (all, or the sample)
	// FoundAuthor and FoundMember count the checked events each read path
	// returned; Missing are the checked events a path that answered did
	// not return (MissingIDs lists the first maxMissingIDs).
	FoundAuthor int      `json:"found_author"`
	FoundMember int      `json:"found_member"`
	Missing     int      `json:"missing"`
	MissingIDs  []string `json:"missing_ids,omitempty"`
	// Unverified are checked events one of the two reads could not be
	// made for (an error, the timeout): neither found missing nor verified.
	Unverified int     `json:"unverified,omitempty"`
	ReadErrors int     `json:"read_errors,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
	Secs       float64 `json:"secs"`
}

const (
	maxMissingIDs = 20
	auditChunk    = 500 // ids per read: Buzz's page limit allows more, one page is enough
)

// auditDurability reads back the acknowledged events (see the file's
// comment). It runs once, before the embedded relay stops.
func (l *loaded) auditDurability(ctx context.Context) *DurabilityReport {
	seen, recs := l.acks.snapshot()
	if l.acks == nil {
		return nil
	}
	start := time.Now()
	rep := &DurabilityReport{Acknowledged: seen, Checked: len(recs)}
	if len(recs) == 0 {
		return rep
	}
	sc, err := l.target()
	if err != nil {
		rep.Unverified, rep.FirstError = len(recs), err.Error()
		return rep
	}
	ctx, cancel := context.WithTimeout(ctx, scenario.Secs(sc.Verify.TimeoutSecs))
	defer cancel()
	pool, err := l.m.httpPool()
	if err != nil {
		rep.Unverified, rep.FirstError = len(recs), err.Error()
		return rep
	}

	// Who is who: channel ids to channels, pubkeys to this shard's humans.
	chans := map[string]scenario.Channel{}
	for _, ch := range sc.Channels() {
		chans[sc.ChannelID(ch)] = ch
	}
	humans := map[string]int{}
	for _, k := range []scenario.Kind{scenario.KindHuman, scenario.KindDesktop} {
		for _, g := range sc.Clients(k, sc.PeakUsers(), l.shard) {
			humans[l.keys().PubKey(g)] = g
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
		tgt := communityTarget(sc, ch.Community)
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
			h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: l.keys().Keys(g), Sink: sink, Transport: pool})
			if err != nil {
				fail(err.Error())
				continue
			}
			for i := 0; i < len(ids); i += auditChunk {
				chunk := ids[i:min(i+auditChunk, len(ids))]
				got, res := h.Query(ctx, []relayclient.Filter{{IDs: chunk, Tags: map[string][]string{"h": {chID}}, Limit: len(chunk)}},
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
		read, found, err := l.memberRead(ctx, sc, tgt, member, chID, evs)
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
	rep.Secs = round3(time.Since(start).Seconds())
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
func (l *loaded) memberRead(ctx context.Context, sc *scenario.Scenario, tgt relayclient.Target, g int, chID string, recs []ackRec) (read, found map[string]bool, err string) {
	read, found = map[string]bool{}, map[string]bool{}
	conn, cerr := relayclient.Connect(ctx, relayclient.Config{Target: tgt, Keys: l.keys().Keys(g), Sink: relayclient.NopSink{}})
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

// durabilityCheck is the audit as a check.
func durabilityCheck(d *DurabilityReport) Check {
	name := "durability audit"
	switch {
	case d == nil:
		return Check{Name: name, Level: CheckSkip, Detail: "off ([verify] sample = 0)"}
	case d.Missing > 0:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d of %d acknowledged events checked are missing: %v", d.Missing, d.Checked, d.MissingIDs)}
	case d.Checked == 0:
		return Check{Name: name, Level: CheckSkip, Detail: "no acknowledged event of a stored kind in a channel"}
	case d.Unverified == d.Checked:
		return Check{Name: name, Level: CheckSkip, Detail: fmt.Sprintf("no read answered: %s", d.FirstError)}
	case d.Unverified > 0:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("%d of %d checked events could not be read back (%s); the rest are there", d.Unverified, d.Checked, d.FirstError)}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("all %d checked of %d acknowledged events read back as their author and as a member", d.Checked, d.Acknowledged)}
}
