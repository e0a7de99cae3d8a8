// Package drill makes disruptions first-class (issue 42): the drills a
// scenario declares ([[drill]]: a restart of the relay, a command run
// where buzzload runs, …) and the Detector, which sees every WebSocket of
// the run from the clients' side (relayclient.Watcher) and tells what
// happened to people: closes by code, connection failures, the reconnect
// herd, how long until every affected client was connected and
// resubscribed again, publishes lost in flight.
//
// Closes and failures less than Gap apart form one disruption, declared
// or not. Decisions are the Detector's methods, each given its moment:
// time is at the edge (the relay client's callbacks, the extension).
package drill

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

// Gap joins closes and failures into one disruption (issue 42).
const Gap = 10 * time.Second

// Detector gathers disruptions. Safe for concurrent use.
type Detector struct {
	mu     sync.Mutex
	ds     []*disruption
	cli    map[string]*client // by identity and host
	closed bool               // Close: nothing more is watched
	ups    int64              // connections seen up (ConnUp), the run's end included
}

// Connections is how many connections were seen up: the run's side of
// the relay's buzz_ws_connections_total (issue 45).
func (d *Detector) Connections() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ups
}

// Close ends the watch: what closes afterwards (the run's own end) is not
// a disruption of the run.
func (d *Detector) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
}

type client struct {
	conns   int       // connections up now
	pending *affected // closed by a disruption, not yet back
}

type affected struct {
	d        *disruption
	closedAt time.Time
	had      int // live subscriptions at the close
	upAt     time.Time
	resubAt  time.Time
}

type disruption struct {
	start, last time.Time
	closes      map[int]int64
	reasons     map[string]int64
	failures    int64
	lost        int64
	affected    []*affected
	connects    map[int64]int64 // per second since start, while clients come back
}

// New makes a detector.
func New() *Detector { return &Detector{cli: map[string]*client{}} }

var _ relayclient.Watcher = (*Detector)(nil)

func key(self, host string) string { return self + "\x00" + host }

// at is the disruption at (joining the current one when it is within Gap).
func (d *Detector) at(t time.Time) *disruption {
	if n := len(d.ds); n > 0 {
		cur := d.ds[n-1]
		if t.Sub(cur.last) < Gap {
			if t.After(cur.last) {
				cur.last = t
			}
			return cur
		}
	}
	cur := &disruption{start: t, last: t, closes: map[int]int64{}, reasons: map[string]int64{}, connects: map[int64]int64{}}
	d.ds = append(d.ds, cur)
	return cur
}

// ConnEnded implements relayclient.Watcher: a close the client did not
// make is part of a disruption.
func (d *Detector) ConnEnded(e relayclient.ConnEnd) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	c := d.client(e.Self, e.Host)
	c.conns = max(c.conns-1, 0)
	if e.ByUs || e.Reason == relayclient.LeaseReason {
		// A NIP-FI session lease's end is an ordinary reconnect, as the
		// schedule's own session end is (issue 41 item 2).
		return
	}
	cur := d.at(e.At)
	cur.closes[e.Code]++
	if e.Reason != "" && len(cur.reasons) < 20 {
		cur.reasons[e.Reason]++
	}
	if c.pending != nil && c.pending.upAt.IsZero() {
		return // closed again before it was back: one outage for this client
	}
	a := &affected{d: cur, closedAt: e.At, had: e.LiveSubs}
	cur.affected = append(cur.affected, a)
	c.pending = a
}

// ConnUp implements relayclient.Watcher.
func (d *Detector) ConnUp(self, host string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ups++
	c := d.client(self, host)
	c.conns++
	a := c.pending
	if a == nil {
		return
	}
	if a.upAt.IsZero() {
		a.upAt = at
		a.d.connects[int64(at.Sub(a.d.start)/time.Second)]++
	}
	if a.had == 0 {
		a.resubAt = at
		c.pending = nil
	}
}

// SubsLive implements relayclient.Watcher: a client back with as many
// live subscriptions as it had is resubscribed.
func (d *Detector) SubsLive(self, host string, n int, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.client(self, host)
	if a := c.pending; a != nil && !a.upAt.IsZero() && n >= a.had {
		a.resubAt = at
		c.pending = nil
	}
}

// Failed counts a connection attempt that failed at t (connect or auth).
func (d *Detector) Failed(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.at(t).failures++
	}
}

// LostInFlight counts a publish settled as lost with its connection at t,
// in the disruption that holds t (none: not counted).
func (d *Detector) LostInFlight(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.ds) - 1; i >= 0; i-- {
		if x := d.ds[i]; !t.Before(x.start) && t.Sub(x.last) < Gap {
			x.lost++
			return
		}
	}
}

func (d *Detector) client(self, host string) *client {
	k := key(self, host)
	c := d.cli[k]
	if c == nil {
		c = &client{}
		d.cli[k] = c
	}
	return c
}

// Reports are the disruptions seen, as report entries, their moments
// counted from start; declared drills are matched to the disruption they
// caused (Match) by the caller.
func (d *Detector) Reports(start time.Time, recoverWithin time.Duration) []report.DrillReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]report.DrillReport, 0, len(d.ds))
	for _, x := range d.ds {
		r := report.DrillReport{Kind: "detected", AtMs: x.start.Sub(start).Milliseconds(), EndMs: x.last.Sub(start).Milliseconds(),
			Closes: map[string]int64{}, Failures: x.failures, LostInFlight: x.lost, Affected: int64(len(x.affected)),
			RecoverWithinMs: float64(recoverWithin.Milliseconds())}
		for code, n := range x.closes {
			r.Closes[strconv.Itoa(code)] = n
		}
		if len(x.reasons) > 0 {
			r.Reasons = map[string]int64{}
			for k, n := range x.reasons {
				r.Reasons[strings.ToValidUTF8(k, "?")] = n
			}
		}
		var up, resub []float64
		for _, a := range x.affected {
			if !a.upAt.IsZero() {
				r.Reconnected++
				up = append(up, ms(a.upAt.Sub(a.closedAt)))
			}
			if !a.resubAt.IsZero() {
				r.Resubscribed++
				resub = append(resub, ms(a.resubAt.Sub(a.closedAt)))
			}
		}
		r.ReconnectMs, r.ResubMs = report.PercentilesOf(up), report.PercentilesOf(resub)
		var per []int64
		for _, n := range x.connects {
			per = append(per, n)
		}
		sort.Slice(per, func(i, j int) bool { return per[i] < per[j] })
		if len(per) > 0 {
			r.HerdPeak = per[len(per)-1]
			r.HerdP99 = per[max(0, (len(per)*99+99)/100-1)]
		}
		out = append(out, r)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
