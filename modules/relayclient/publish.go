package relayclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// PublishOptions tune one publish.
type PublishOptions struct {
	Op      string        // default "publish" (e.g. "hot_reply")
	Timeout time.Duration // from the start of the send to the OK; default Config.PublishTimeout
	Due     time.Time     // when the schedule wanted it sent (Result.Due); zero: unscheduled
	// DuplicateOK counts an OK false whose reason starts "duplicate:" as
	// ok: for an idempotent action (a reaction, which Buzz keeps once per
	// author, target and emoji) the state asked for already holds, so a
	// rerun against the same relay is not an error.
	DuplicateOK bool
}

// PublishAsync sends ev and returns once it is written; done (may be nil)
// gets the Result when the OK arrives, the deadline passes (error), a
// rate-limited NOTICE settles it, or the connection ends. The Result is
// recorded either way. A write that fails (or cannot finish by the
// deadline) ends the connection. The returned error is the write's.
// done may run before PublishAsync returns (a write error, a very fast OK).
func (c *Conn) PublishAsync(ev *nostr.Event, opt PublishOptions, done func(Result)) error {
	var fn func(Result, int64)
	if done != nil {
		fn = func(r Result, _ int64) { done(r) }
	}
	_, err := c.publish(ev, opt, fn)
	return err
}

func (c *Conn) publish(ev *nostr.Event, opt PublishOptions, done func(Result, int64)) (*pending, error) {
	start := time.Now()
	if opt.Op == "" {
		opt.Op = OpPublish
	}
	if opt.Timeout <= 0 {
		opt.Timeout = c.cfg.PublishTimeout
	}
	p := &pending{kind: kindPublish, op: opt.Op, key: ev.ID, start: start, due: opt.Due, done: done, dupOK: opt.DuplicateOK, ev: ev}
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	*bp = appendEventEnvelope((*bp)[:0], wire.VerbEvent, ev)
	p.sent = int64(len(*bp))
	if c.ledger != nil {
		c.ledger.Sent(ev, c.cfg.Target.Host, "ws", start)
	}
	// The deadline counts from the start of the send; the timer may fire
	// while the write is still blocked, and whichever settles first wins.
	if err := c.register(&c.pubs, p, opt.Timeout); err != nil {
		c.complete(p, p.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		return p, err
	}
	err := c.write(*bp, start.Add(opt.Timeout))
	if err != nil {
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
		return p, err
	}
	return p, nil
}

// Publish sends ev and waits for its settlement (see PublishAsync). If ctx
// ends first the publish is settled as pending (recorded so) and returned.
func (c *Conn) Publish(ctx context.Context, ev *nostr.Event, opt PublishOptions) Result {
	ch := make(chan Result, 1)
	p, _ := c.publish(ev, opt, func(r Result, _ int64) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.abandon(q, q.result(time.Now(), OutcomePending, "cancelled before the OK: "+ctx.Err().Error(), 0, 0))
		}
		return <-ch
	}
}

// --- COUNT ---

// CountOptions tune one COUNT.
type CountOptions struct {
	Op      string        // default "count"
	ID      string        // subscription id; default generated
	Timeout time.Duration // default Config.PublishTimeout
}

// Count sends a COUNT and waits for the reply, recording the Result. A
// CLOSED for its id settles it with the relay's reason.
func (c *Conn) Count(ctx context.Context, filters []Filter, opt CountOptions) (int64, Result) {
	start := time.Now()
	if opt.Op == "" {
		opt.Op = OpCount
	}
	if opt.Timeout <= 0 {
		opt.Timeout = c.cfg.PublishTimeout
	}
	if opt.ID == "" {
		opt.ID = c.nextID('c')
	}
	type reply struct {
		r Result
		n int64
	}
	ch := make(chan reply, 1)
	p := &pending{kind: kindCount, op: opt.Op, key: opt.ID, start: start,
		done: func(r Result, n int64) { ch <- reply{r, n} }}
	fail := func(msg string) (int64, Result) {
		r := p.result(time.Now(), OutcomeError, msg, 0, 0)
		c.cfg.Sink.Record(r)
		return 0, r
	}
	if err := checkSubID(opt.ID); err != nil {
		return fail(err.Error())
	}
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	var err error
	if *bp, err = appendSubEnvelope((*bp)[:0], wire.VerbCount, opt.ID, filters); err != nil {
		return fail(err.Error())
	}
	p.sent = int64(len(*bp))
	if err := c.register(&c.counts, p, opt.Timeout); err != nil {
		return fail(err.Error())
	}
	if err := c.write(*bp, earliest(ctx, start.Add(opt.Timeout))); err != nil {
		if q := c.takeIf(&c.counts, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
	}
	select {
	case rp := <-ch:
		return rp.n, rp.r
	case <-ctx.Done():
		if q := c.takeIf(&c.counts, p.key, p); q != nil {
			c.abandon(q, q.result(time.Now(), OutcomePending, "cancelled before the COUNT reply: "+ctx.Err().Error(), 0, 0))
		}
		rp := <-ch
		return rp.n, rp.r
	}
}

func (c *Conn) nextID(prefix byte) string {
	c.mu.Lock()
	c.seq++
	n := c.seq
	c.mu.Unlock()
	return string(prefix) + strconv.FormatUint(n, 36)
}

func checkSubID(id string) error {
	if len(id) < 1 || len(id) > 256 {
		return fmt.Errorf("relay: subscription id must be 1-256 bytes, got %d", len(id))
	}
	return nil
}

// earliest returns the earlier of ctx's deadline and d.
func earliest(ctx context.Context, d time.Time) time.Time {
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

func retryAfter(h http.Header, body []byte) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d.Round(time.Second)
			}
		}
	}
	return RetryIn(string(body))
}
