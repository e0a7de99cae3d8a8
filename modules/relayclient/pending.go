package relayclient

import (
	"errors"

	"fmt"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// opKind tells what a pending entry waits for.
type opKind uint8

const (
	kindPublish opKind = iota
	kindAuth
	kindCount
)

// pending is one operation awaiting its answer.
type pending struct {
	kind  opKind
	op    string
	key   string // event id or COUNT sub id
	seq   uint64 // send order, for "oldest pending"
	start time.Time
	due   time.Time // Result.Due
	sent  int64
	timer *time.Timer
	done  func(Result, int64)
	dupOK bool         // PublishOptions.DuplicateOK
	ev    *nostr.Event // a publish's event: Result.Event
}

func (p *pending) result(now time.Time, o Outcome, msg string, recv int64, retry time.Duration) Result {
	return Result{Op: p.op, Start: p.start, Duration: now.Sub(p.start), Outcome: o, Error: msg,
		BytesSent: p.sent, BytesReceived: recv, RetryAfter: retry, Due: p.due, Event: p.ev}
}

// complete records and hands over a settled operation; the caller has
// already removed p from its map, so this runs once per operation.
func (c *Conn) complete(p *pending, r Result, count int64) {
	if p.timer != nil {
		p.timer.Stop()
	}
	c.cfg.Sink.Record(r)
	if c.ledger != nil && p.kind == kindPublish {
		c.ledger.Settled(p.key, r.Outcome == OutcomeOK, r.Start.Add(r.Duration))
	}
	if p.done != nil {
		p.done(r, count)
	}
}

// register adds p under its key to m (allocated lazily) and arms its
// deadline (timeout after p.start; 0 = none). The timer is set under the
// lock so that whoever later takes p sees it.
func (c *Conn) register(m *map[string]*pending, p *pending, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.closedErrLocked()
	}
	if *m == nil {
		*m = make(map[string]*pending)
	}
	if _, dup := (*m)[p.key]; dup {
		return fmt.Errorf("relay: %s %s is already in flight on this connection", p.op, p.key)
	}
	c.seq++
	p.seq = c.seq
	(*m)[p.key] = p
	if timeout > 0 {
		p.timer = time.AfterFunc(timeout-time.Since(p.start), func() {
			if q := c.takeIf(m, p.key, p); q != nil {
				msg := "no OK within " + timeout.String()
				if q.kind == kindCount {
					msg = "no COUNT reply within " + timeout.String()
				}
				c.abandon(q, q.result(time.Now(), OutcomeError, msg, 0, 0))
			}
		})
	}
	return nil
}

// takeIf removes key from m if it still maps to want (nil = any) and returns it.
func (c *Conn) takeIf(m *map[string]*pending, key string, want *pending) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := (*m)[key]
	if p == nil || (want != nil && p != want) {
		return nil
	}
	delete(*m, key)
	return p
}

// abandon settles p (already taken from its map) with r before its answer
// came: a deadline, or the caller's context. The relay may still answer
// (an OK for a publish or an AUTH, a COUNT), so the key is remembered and
// the late answer is not a bad frame; every way of giving up on an answer
// goes through here.
func (c *Conn) abandon(p *pending, r Result) {
	c.rememberLate(p.key)
	c.complete(p, r, 0)
}

// rememberLate notes an abandoned event id or COUNT id (see abandon).
func (c *Conn) rememberLate(id string) {
	const ring = 64
	c.mu.Lock()
	if len(c.late) >= ring {
		copy(c.late, c.late[1:])
		c.late = c.late[:ring-1]
	}
	c.late = append(c.late, id)
	c.mu.Unlock()
}

func (c *Conn) wasLate(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.late {
		if l == id {
			c.late = append(c.late[:i], c.late[i+1:]...)
			return true
		}
	}
	return false
}

func (c *Conn) onOK(f *Frame, at time.Time, n int64, b []byte) {
	p := c.takeIf(&c.pubs, f.EventID, nil)
	if p == nil {
		if c.wasLate(f.EventID) {
			c.stats.late.Add(1)
			return
		}
		c.badFrame(at, n, errors.New("OK for an event id with no publish in flight"), b)
		return
	}
	if f.OK || (p.dupOK && IsDuplicate(f.Message)) {
		c.complete(p, p.result(at, OutcomeOK, "", n, 0), 0)
		return
	}
	o, retry := Classify(f.Message)
	r := p.result(at, o, trimReason(f.Message), n, retry)
	r.Refused = true
	c.complete(p, r, 0)
}

func (c *Conn) onCount(f *Frame, at time.Time, n int64, b []byte) {
	p := c.takeIf(&c.counts, f.SubID, nil)
	if p == nil {
		if c.wasLate(f.SubID) {
			c.stats.late.Add(1)
			return
		}
		c.badFrame(at, n, errors.New("COUNT for a subscription id with no COUNT in flight"), b)
		return
	}
	c.complete(p, p.result(at, OutcomeOK, "", n, 0), f.Count)
}

// onNotice handles NOTICE. A rate-limited NOTICE is how relay-v0.2.1
// rejects an EVENT or a COUNT (no OK follows), and how every Buzz version
// reports handler saturation. A NOTICE names no event, so it settles an
// operation only when exactly one publish or COUNT is in flight on this
// socket (then it cannot be another's); with several in flight it settles
// none by guess — each settles by its own OK or its deadline — and the
// NOTICE is recorded as a throttle on the connection (OpNotice). A settled
// operation's key is remembered, so an OK that still comes is late, not a
// bad frame.
func (c *Conn) onNotice(f *Frame, at time.Time, n int64) {
	c.stats.notices.Add(1)
	if c.cfg.OnNotice != nil {
		c.cfg.OnNotice(f.Message, at)
	}
	if !strings.HasPrefix(f.Message, "rate-limited:") {
		return
	}
	o, retry := Classify(f.Message)
	c.mu.Lock()
	var only *pending
	var from *map[string]*pending
	inFlight := 0
	for _, m := range []*map[string]*pending{&c.pubs, &c.counts} {
		for _, p := range *m {
			if p.kind == kindAuth {
				continue
			}
			inFlight++
			only, from = p, m
		}
	}
	if inFlight == 1 {
		delete(*from, only.key)
	} else {
		only = nil
	}
	c.mu.Unlock()
	if only == nil {
		msg := trimReason(f.Message)
		if inFlight > 1 {
			msg = fmt.Sprintf("%s (NOTICE with %d operations in flight: none settled by guess)", msg, inFlight)
		}
		c.cfg.Sink.Record(Result{Op: OpNotice, Start: at, Outcome: o, Error: msg,
			BytesReceived: n, RetryAfter: retry})
		return
	}
	c.rememberLate(only.key)
	c.complete(only, only.result(at, o, "NOTICE without OK: "+trimReason(f.Message), n, retry), 0)
}
