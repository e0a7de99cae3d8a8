package extension

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/buzzload/buzzload/modules/relayclient"
)

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

// unackedLog keeps the never-acknowledged events of a run.
type unackedLog struct {
	n     atomic.Int64 // kept, for the deliveries' fast path
	mu    sync.RWMutex
	recs  map[string]*unackedRec
	total int64 // never acknowledged, kept or not
}

func newUnackedLog() *unackedLog { return &unackedLog{recs: map[string]*unackedRec{}} }

// record takes a publish's Result: an acknowledgement clears its id (a
// retried publish of the same event), a refusal or no answer keeps it.
func (u *unackedLog) record(r *relayclient.Result) {
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
		rec := &unackedRec{ackRec: ackRec{id: r.Event.ID, author: r.Event.PubKey, channel: ch}, refused: r.Refused}
		u.recs[rec.id] = rec
		u.n.Add(1)
	}
}

// watching says whether any delivery may be of a never-acknowledged event.
func (u *unackedLog) watching() bool { return u != nil && u.n.Load() > 0 }

// delivered counts a delivery of the event id (hex) if it is one.
func (u *unackedLog) delivered(id []byte) {
	u.mu.RLock()
	rec := u.recs[string(id)] // no allocation: the conversion is the index
	u.mu.RUnlock()
	if rec != nil {
		rec.delivered.Add(1)
	}
}

// UnackedReport is what became of the events the relay never acknowledged.
type UnackedReport struct {
	Total      int64 `json:"total"`      // publishes of stored kinds refused or unanswered (throttles aside)
	Refused    int   `json:"refused"`    // of the kept ones, refused by the relay
	Unanswered int   `json:"unanswered"` // of the kept ones, never answered
	// Delivered are kept events delivered to a subscriber after their
	// publish settled; Stored those the relay returned when read back.
	DeliveredRefused    int      `json:"delivered_refused"`
	DeliveredUnanswered int      `json:"delivered_unanswered"`
	StoredRefused       int      `json:"stored_refused"`
	StoredUnanswered    int      `json:"stored_unanswered"`
	Checked             int      `json:"checked"`               // read back (the rest: no member to read as, a read that failed)
	RefusedIDs          []string `json:"refused_ids,omitempty"` // refused yet delivered or stored (the first maxMissingIDs)
	FirstError          string   `json:"first_error,omitempty"`
}

// auditUnacked reads the never-acknowledged events back as a member of
// their channel, after the run.
func (l *loaded) auditUnacked(ctx context.Context) *UnackedReport {
	u := l.unacked
	if u == nil {
		return nil
	}
	u.mu.RLock()
	rep := &UnackedReport{Total: u.total}
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
	if sc, err := l.target(); err != nil {
		rep.FirstError = err.Error()
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
			read, found, e := l.memberRead(ctx, sc, communityTarget(sc, all[i].Community), member, chID, evs)
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unackedCheck: a refused event that reached readers fails; an unanswered
// one that did warns (an acknowledgement lost under load).
func unackedCheck(u *UnackedReport) Check {
	name := "never-acknowledged events"
	switch {
	case u == nil || u.Total == 0:
		return Check{Name: name, Level: CheckSkip, Detail: "every publish of a stored kind was acknowledged (or throttled)"}
	case u.DeliveredRefused+u.StoredRefused > 0:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("the relay refused %d events yet delivered %d and stored %d of them: %v",
			u.Refused, u.DeliveredRefused, u.StoredRefused, u.RefusedIDs)}
	case u.DeliveredUnanswered+u.StoredUnanswered > 0:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("%d publishes got no answer, yet %d were delivered and %d stored: acknowledgements lost (their authors saw a failure)",
			u.Unanswered, u.DeliveredUnanswered, u.StoredUnanswered)}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("%d refused or unanswered publishes: none delivered after, none stored (%d read back)", u.Total, u.Checked)}
}
