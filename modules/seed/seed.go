package seed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ErrEmbedded is returned for a scenario that names no relay: there is
// nothing to seed that would outlive the command. `buzzload run` seeds its
// embedded relay itself, by calling Seed with the relay's URLs set.
var ErrEmbedded = errors.New("the scenario names no relay (target.ws_url and target.http_url are empty), " +
	"so it runs against the embedded relay, which `buzzload run` starts and seeds itself; " +
	"to seed a relay of your own, set target.ws_url and target.http_url")

// Seed provisions sc's communities, channels, private membership, history,
// deep threads and hot thread on the relay sc.Target names (see the package
// doc for the order and the rerun rules). It works against any relay URL,
// an in-process modules/relay included.
//
// The Result is returned whenever the seed started, also on failure; the
// error is non-nil when the seed failed: a community that cannot be used, a
// channel or member the relay refused, any planned post not accepted, or ctx
// ending. Result.OK() is the exit status.
func Seed(ctx context.Context, sc *scenario.Scenario, opt Options) (*Result, error) {
	start := time.Now()
	if sc == nil {
		return nil, errors.New("seed: no scenario")
	}
	if sc.Embedded() {
		return nil, fmt.Errorf("seed: %w", ErrEmbedded)
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if sc.Target.CommunityHostTemplate != "" && opt.Operator == nil {
		return nil, errors.New("seed: an operator key is needed to provision the communities of target.community_host_template")
	}
	conc := opt.Concurrency
	if conc <= 0 {
		conc = sc.Shape.SeedConcurrency
	}
	n, err := newRPC(sc, opt.Sink, opt.Transport, opt.Timeout, opt.MaxThrottleRetries, opt.Retries, conc)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	defer n.close()
	outer := ctx
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	n.abort = abort
	if opt.ThrottleTimeout != 0 {
		n.giveUp = opt.ThrottleTimeout // negative: never give up on throttles
	}
	if opt.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opt.Deadline, &DeadlineError{Deadline: opt.Deadline})
		defer cancel()
	}
	s := newSeeder(sc, opt, n, conc, &tracker{fn: opt.Progress})
	err = s.run(ctx)
	s.finish()
	s.res.Duration = time.Since(start)
	if err != nil {
		err = fmt.Errorf("seed: %w", explainStop(outer, ctx, n, err))
		s.res.Error = err.Error()
	}
	s.res.Success = s.res.OK()
	return s.res, err
}

// newSeeder is the seeder of sc over n with its tasks planned: Seed runs
// them, Verify checks what they would have written.
func newSeeder(sc *scenario.Scenario, opt Options, n *rpc, conc int, track *tracker) *seeder {
	s := &seeder{sc: sc, opt: opt, rpc: n, conc: conc, ids: newIdentities(sc), track: track,
		res: &Result{RunID: sc.RunID, Refusals: []Refusal{}}}
	s.plans = buildPlans(sc)
	s.plan()
	return s
}

// DeadlineError is a seed stopped by Options.Deadline.
type DeadlineError struct{ Deadline time.Duration }

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("did not finish within its %v deadline", e.Deadline)
}

// explainStop turns a seed stopped by its context into an error that says
// why: the relay throttled it into giving up (*ThrottledError), its own
// deadline passed (*DeadlineError), or the caller stopped it (the setup
// timeout, a signal). The last two add how throttled the seed was, so a
// seed throttled into the setup timeout says so instead of a bare timeout.
func explainStop(outer, ctx context.Context, n *rpc, err error) error {
	if ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	var te *ThrottledError
	if errors.As(cause, &te) {
		return te
	}
	if outer.Err() != nil {
		cause = fmt.Errorf("stopped (%w)", context.Cause(outer))
	}
	if note := n.throttleNote(time.Now()); note != "" {
		return fmt.Errorf("%w; %s", cause, note)
	}
	return cause
}

type seeder struct {
	sc    *scenario.Scenario
	opt   Options
	rpc   *rpc
	conc  int
	ids   *identities
	track *tracker
	plans []*channelPlan

	mu  sync.Mutex // guards res
	res *Result
}

// plan sets every phase's planned count up front, so a seed that stops
// early still says what it did not do.
func (s *seeder) plan() {
	r := s.res
	r.Channels.Planned = len(s.plans)
	for _, p := range s.plans {
		if p.private {
			r.Members.Planned += len(p.members)
		}
	}
	r.Posts.Planned = len(s.plans)*postsPerChannel(s.sc) + hotPosts(s.sc)
}

// finish counts what was neither settled nor refused as skipped.
func (s *seeder) finish() {
	for _, c := range []*Counts{&s.res.Channels, &s.res.Members, &s.res.Posts} {
		c.Skipped = max(0, c.Planned-c.Created-c.Existing-c.Refused)
	}
}

func (s *seeder) run(ctx context.Context) error {
	if err := s.communities(ctx); err != nil {
		return err
	}
	if err := s.relayMembers(ctx); err != nil {
		return err
	}
	if err := s.channels(ctx); err != nil {
		return err
	}
	if err := s.members(ctx); err != nil {
		return err
	}
	return s.posts(ctx)
}

// count adds to one of the result's counters.
func (s *seeder) count(f func(r *Result)) {
	s.mu.Lock()
	f(s.res)
	s.mu.Unlock()
}

func (s *seeder) refuse(r Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.res.Refusals) < maxRefusals {
		s.res.Refusals = append(s.res.Refusals, r)
	} else {
		s.res.RefusalsOmitted++
	}
}

// firstRefusal describes the first refusal of a phase, for the error.
func (s *seeder) firstRefusal(phase string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.res.Refusals {
		if r.Phase == phase {
			return r.String()
		}
	}
	return ""
}

// firstErr keeps the first error of concurrent workers.
type firstErr struct {
	mu  sync.Mutex
	err error
}

func (f *firstErr) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstErr) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// ---- phase 1: communities ----

func (s *seeder) communities(ctx context.Context) error {
	nc := s.sc.Shape.Communities
	s.res.Communities = make([]Community, nc)
	s.track.start(PhaseCommunities, nc)
	if s.sc.Target.CommunityHostTemplate == "" {
		for i := range nc {
			s.res.Communities[i] = Community{Index: i, Owner: s.ids.owner(i).keys.PubKey(), Status: "unmanaged"}
		}
		s.track.add(nc)
		return nil
	}
	op, err := s.rpc.operator(s.opt.Operator, s.opt.OperatorOrigin)
	if err != nil {
		return err
	}
	forEach(ctx, nc, s.conc, func(ctx context.Context, i int) {
		c := s.provision(ctx, op, i)
		s.mu.Lock()
		s.res.Communities[i] = c
		s.mu.Unlock()
		s.track.add(1)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	var failed []string
	for _, c := range s.res.Communities {
		if c.Status == "failed" {
			failed = append(failed, c.Error)
			s.refuse(Refusal{Phase: PhaseCommunities, Community: c.Index, Channel: -1, What: "host " + c.Host, Reason: c.Error})
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d communities cannot be used: %s", len(failed), nc, failed[0])
	}
	return nil
}

// provision creates community i with create_only, or reuses it when this
// run's fixture owner already owns it.
func (s *seeder) provision(ctx context.Context, op *relayclient.HTTP, i int) Community {
	host := s.sc.CommunityHost(i)
	owner := s.ids.owner(i).keys.PubKey()
	c := Community{Index: i, Host: host, Owner: owner, Status: "failed"}
	var rep relayclient.ProvisionReply
	r, err := s.rpc.call(ctx, func() relayclient.Result {
		var res relayclient.Result
		rep, res = op.ProvisionCommunity(ctx, host, owner, true, relayclient.CallOptions{Op: OpProvision, Timeout: s.rpc.timeout})
		return res
	})
	if err != nil {
		c.Error = fmt.Sprintf("host %s: provisioning cut short: %v", host, err)
		return c
	}
	if r.Outcome == relayclient.OutcomeOK {
		c.CommunityID = rep.CommunityID
		if rep.OwnerPubkey != "" && rep.OwnerPubkey != owner {
			c.Error = fmt.Sprintf("host %s belongs to another owner (%s)", host, rep.OwnerPubkey)
			return c
		}
		c.Status = "created"
		if rep.Status == "existed" {
			c.Status = "existed"
		}
		return c
	}
	why := reason(r)
	var list relayclient.CommunityList
	lr, err := s.rpc.call(ctx, func() relayclient.Result {
		var res relayclient.Result
		list, res = op.ListCommunities(ctx, owner, relayclient.CallOptions{Op: OpList, Timeout: s.rpc.timeout})
		return res
	})
	if err != nil {
		c.Error = fmt.Sprintf("host %s: ownership check cut short: %v", host, err)
		return c
	}
	if lr.Outcome != relayclient.OutcomeOK {
		c.Error = fmt.Sprintf("host %s was not provisioned (%s) and the fixture owner's communities cannot be listed (%s)", host, why, reason(lr))
		return c
	}
	norm := nostr.NormalizeHost(host)
	for _, ci := range list.Communities {
		if nostr.NormalizeHost(ci.Host) != norm {
			continue
		}
		if archived(ci.ArchivedAt) {
			c.Error = fmt.Sprintf("host %s is this run's but archived (torn down); use a fresh run_id", host)
			return c
		}
		c.Status, c.CommunityID = "existed", ci.CommunityID
		return c
	}
	c.Error = fmt.Sprintf("host %s was not provisioned (%s) and this run's fixture owner does not own it: "+
		"another owner holds it or it is a deleted tombstone; use a fresh run_id or a host template with {run}", host, why)
	return c
}

// ---- phase 2: channels ----

func (s *seeder) channels(ctx context.Context) error {
	s.track.start(PhaseChannels, len(s.plans))
	var fe firstErr
	forEach(ctx, len(s.plans), s.conc, func(ctx context.Context, i int) {
		p := s.plans[i]
		own := s.ids.owner(p.ch.Community)
		h, err := s.rpc.community(p.ch.Community, own.keys, nil)
		if err != nil {
			fe.set(err)
			return
		}
		vis := "open"
		if p.private {
			vis = "private"
		}
		tags := [][]string{{"h", p.id}, {"name", s.sc.ChannelName(p.ch)}, {"visibility", vis}}
		pub, err := s.rpc.publish(ctx, h, OpChannel, func(at time.Time) (*nostr.Event, error) {
			return own.keys.NewEvent(nostr.KindCreateGroup, tags, "", at)
		})
		if err != nil {
			fe.set(err)
			return
		}
		switch why := pub.why; {
		case why == "" && !pub.dup:
			s.count(func(r *Result) { r.Channels.Created++ })
		case pub.dup || strings.HasPrefix(why, "duplicate:"):
			s.count(func(r *Result) { r.Channels.Existing++ })
		default:
			s.count(func(r *Result) { r.Channels.Refused++ })
			s.refuse(Refusal{Phase: PhaseChannels, Community: p.ch.Community, Channel: p.ch.Index, ChannelID: p.id,
				What: s.sc.ChannelName(p.ch), Pubkey: own.keys.PubKey(), Reason: why})
		}
		s.track.add(1)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}
	if n := s.res.Channels.Refused; n > 0 {
		return fmt.Errorf("the relay refused %d of %d channels: %s", n, len(s.plans), s.firstRefusal(PhaseChannels))
	}
	return nil
}

// ---- phase 3: members ----

type memberChunk struct {
	p  *channelPlan
	gs []int
}
