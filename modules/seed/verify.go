package seed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ErrIncomplete is wrapped by Verify's error when the fixture is not (yet)
// all on the relay.
var ErrIncomplete = errors.New("the fixture is incomplete")

// Verify checks, writing nothing, that sc's whole fixture is on the relay:
// every channel (its relay-signed kind 39000), every private channel's
// members (kind 39002) and every planned post by its slot's author (the
// reads a rerun of Seed makes). It is how the instances of a distributed
// run that do not seed know that the one that does has finished
// (docs/distributed.md "Seed once"): Seed posts last, so once every planned
// post is there the fixture is complete.
//
// The first channel checked is the last one Seed posts into, then the hot
// thread's (its replies are Seed's last tasks), then the rest: polling an
// unfinished fixture stops at its first gap, so it costs a few queries,
// not the whole fixture's. The Result counts what was found as Existing
// and, once a gap is found, the rest as Skipped; the error wraps
// ErrIncomplete naming the gap, or is a read that failed.
func Verify(ctx context.Context, sc *scenario.Scenario, opt Options) (*Result, error) {
	start := time.Now()
	if sc == nil {
		return nil, errors.New("verify: no scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	conc := max(1, sc.Shape.SeedConcurrency)
	n, err := newRPC(sc, opt.Sink, opt.Transport, opt.Timeout, opt.MaxThrottleRetries, opt.Retries, conc)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer n.close()
	s := newSeeder(sc, opt, n, conc, &tracker{})
	err = s.verify(ctx)
	s.finish()
	s.res.Duration = time.Since(start)
	if err != nil {
		err = fmt.Errorf("verify run_id %q: %w", sc.RunID, err)
		s.res.Error = err.Error()
	}
	s.res.Success = s.res.OK()
	return s.res, err
}

// verifyOrder is the order Verify checks the plans in (see Verify).
func verifyOrder(n int) []int {
	if n == 0 {
		return nil
	}
	order := []int{n - 1}
	for i := 0; i < n-1; i++ {
		order = append(order, i)
	}
	return order
}

func (s *seeder) verify(ctx context.Context) error {
	for _, i := range verifyOrder(len(s.plans)) {
		if err := s.verifyChannel(ctx, s.plans[i]); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// verifyChannel checks one channel's part of the fixture.
func (s *seeder) verifyChannel(ctx context.Context, p *channelPlan) error {
	own := s.ids.owner(p.ch.Community)
	h, err := s.rpc.community(p.ch.Community, own.keys, nil)
	if err != nil {
		return err
	}
	evs, err := s.rpc.query(ctx, h, "the state of channel "+chName(p.ch), []relayclient.Filter{{
		Kinds: []int{nostr.KindGroupMetadata, nostr.KindGroupMembers}, Tags: map[string][]string{"d": {p.id}}, Limit: 10}})
	if err != nil {
		// Most often the community is not provisioned yet ("no community is
		// configured for this host"); a relay that is down reads the same.
		return fmt.Errorf("%w: %w", ErrIncomplete, err)
	}
	var meta, members *nostr.Event
	for i := range evs {
		e := &evs[i]
		if e.TagValue("d") != p.id {
			continue
		}
		switch {
		case e.Kind == nostr.KindGroupMetadata && (meta == nil || e.CreatedAt > meta.CreatedAt):
			meta = e
		case e.Kind == nostr.KindGroupMembers && (members == nil || e.CreatedAt > members.CreatedAt):
			members = e
		}
	}
	if meta == nil {
		return fmt.Errorf("%w: channel %s (%s) is not on the relay", ErrIncomplete, chName(p.ch), p.id)
	}
	s.res.Channels.Existing++
	if p.private {
		have := map[string]bool{}
		if members != nil {
			for _, t := range members.Tags {
				if len(t) >= 2 && t[0] == "p" {
					have[t[1]] = true
				}
			}
		}
		missing := 0
		for _, g := range p.members {
			a, err := s.ids.client(g)
			if err != nil {
				return err
			}
			if have[a.keys.PubKey()] {
				s.res.Members.Existing++
			} else {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%w: channel %s has %d of its %d members", ErrIncomplete, chName(p.ch), len(p.members)-missing, len(p.members))
		}
	}
	if err := s.readPosts(ctx, p); err != nil {
		return err
	}
	want := postsPerChannel(s.sc)
	if p.ch == s.sc.HotThreadChannel() {
		want += hotPosts(s.sc)
	}
	s.res.Posts.Existing += len(p.found)
	if len(p.found) < want {
		return fmt.Errorf("%w: channel %s has %d of its %d seeded posts", ErrIncomplete, chName(p.ch), len(p.found), want)
	}
	return nil
}

// WaitOptions bound WaitComplete.
type WaitOptions struct {
	// Timeout is how long to wait for the fixture (default 10 min).
	Timeout time.Duration
	// Interval is the first pause between checks; it doubles up to
	// MaxInterval (defaults 500 ms and 5 s).
	Interval, MaxInterval time.Duration
	// Progress, when set, sees every incomplete check's error.
	Progress func(error)
}

// WaitComplete polls Verify until the fixture is complete (its Result and
// nil), ctx ends, or Timeout passes: then the last check's Result and an
// error saying how long it waited and what was still missing. A read that
// fails is retried like a gap: the seeding instance may be provisioning
// the very community being read.
func WaitComplete(ctx context.Context, sc *scenario.Scenario, opt Options, w WaitOptions) (*Result, error) {
	if w.Timeout <= 0 {
		w.Timeout = 10 * time.Minute
	}
	if w.Interval <= 0 {
		w.Interval = 500 * time.Millisecond
	}
	if w.MaxInterval <= 0 {
		w.MaxInterval = 5 * time.Second
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	pause := w.Interval
	for {
		res, err := Verify(ctx, sc, opt)
		if err == nil {
			return res, nil
		}
		if res == nil { // not a check: a bad scenario
			return nil, err
		}
		if w.Progress != nil {
			w.Progress(err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, fmt.Errorf("waited %s for the fixture of run_id %q (seeded by the instance whose execution segment starts at 0): %w",
				time.Since(start).Round(time.Second), sc.RunID, lastGap(err, ctx.Err()))
		case <-t.C:
		}
		pause = min(2*pause, w.MaxInterval)
	}
}

// lastGap is the last check's error unless that was only the context
// ending while it ran.
func lastGap(check, ctxErr error) error {
	if check != nil && !errors.Is(check, context.DeadlineExceeded) && !errors.Is(check, context.Canceled) {
		return check
	}
	return ctxErr
}
