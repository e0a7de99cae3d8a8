package relayclient

import (
	"context"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// Auth answers the relay's challenge (NIP-42, with the NIP-OA tag for
// agents) and waits for its OK, recording "auth". Without a deadline on
// ctx it is bounded by ConnectTimeout.
func (c *Conn) Auth(ctx context.Context) error {
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.ConnectTimeout)
		defer cancel()
	}
	p := &pending{kind: kindAuth, op: OpAuth, start: start}
	fail := func(o Outcome, msg string) error {
		r := p.result(time.Now(), o, msg, 0, 0)
		c.cfg.Sink.Record(r)
		return &OpError{Result: r}
	}
	if c.cfg.Keys == nil {
		return fail(OutcomeError, "no keys to authenticate with")
	}
	select {
	case <-c.chal:
	case <-ctx.Done():
		return fail(OutcomeError, "no AUTH challenge from the relay: "+ctx.Err().Error())
	case <-c.done:
		return fail(OutcomeError, "no AUTH challenge: "+c.errText())
	}
	c.mu.Lock()
	challenge := c.challenge
	c.mu.Unlock()
	ev, err := nostr.AuthEvent(c.cfg.Keys, c.relayURL, challenge, time.Now(), c.cfg.OATag)
	if err != nil {
		return fail(OutcomeError, "build AUTH: "+err.Error())
	}
	res := make(chan Result, 1)
	p.key = ev.ID
	p.done = func(r Result, _ int64) { res <- r }
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	*bp = appendEventEnvelope((*bp)[:0], wire.VerbAuth, ev)
	p.sent = int64(len(*bp))
	if err := c.register(&c.pubs, p, 0); err != nil {
		return fail(OutcomeError, err.Error())
	}
	deadline, _ := ctx.Deadline()
	err = c.write(*bp, deadline)
	if err != nil {
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
		r := <-res
		return &OpError{Result: r}
	}
	select {
	case r := <-res:
		if r.Outcome != OutcomeOK {
			return &OpError{Result: r}
		}
		c.mu.Lock()
		c.authed = true
		c.mu.Unlock()
		return nil
	case <-ctx.Done():
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			// Its OK may still come (a relay slow under load): late, not a bad frame.
			c.abandon(q, q.result(time.Now(), OutcomeError, "no OK for AUTH: "+ctx.Err().Error(), 0, 0))
		}
		return &OpError{Result: <-res}
	}
}

// Authenticated reports whether Auth succeeded on this connection.
func (c *Conn) Authenticated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authed
}

// errText is why the connection ended: the relay's side when it ended it,
// else the closed-connection error naming who closed it.
func (c *Conn) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lostErr != nil {
		return c.lostErr.Error()
	}
	return c.closedErrLocked().Error()
}
