package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// Seed roles of sc.setup({role}). In a distributed run every instance runs
// setup() (k6-operator#223), so one seeds and the others wait until the
// fixture is complete and verify it (docs: examples/distributed.md "Seed
// once").
const (
	RoleAuto = "auto" // seed if SeedRole says so, else wait
	RoleSeed = "seed" // seed (idempotent), whatever the instance
	RoleWait = "wait" // never write: wait for the fixture, then verify it
)

// SeedRole decides what an instance's setup() does with the fixture:
// every instance of an embedded relay seeds its own relay; otherwise the
// instance whose execution segment starts at 0 seeds (the operator's
// runner 1, an Indexed Job's index 0, a single unsegmented run), and so
// does shard 0 of buzz.load's shards; every other instance waits. A pure
// function of the instance's place in the test, so no coordination is
// needed however the instances were started.
func SeedRole(embedded bool, seg segment.Segment, shard scenario.Shard) string {
	switch {
	case embedded:
		return RoleSeed
	case seg.From.Sign() != 0:
		return RoleWait
	case shard.Count > 1 && shard.Index != 0:
		return RoleWait
	}
	return RoleSeed
}

// setupOptions are sc.setup()'s options.
type setupOptions struct {
	role string
	wait time.Duration // 0: the run's setupTimeout less a margin
}

func parseSetupOptions(rt *sobek.Runtime, v sobek.Value) (setupOptions, error) {
	o := setupOptions{role: RoleAuto}
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return o, nil
	}
	obj := v.ToObject(rt)
	if r := obj.Get("role"); r != nil && !sobek.IsUndefined(r) && !sobek.IsNull(r) && r.String() != "" {
		switch r.String() {
		case RoleAuto, RoleSeed, RoleWait:
			o.role = r.String()
		default:
			return o, fmt.Errorf("setup(options): role %q: want %q, %q or %q", r.String(), RoleAuto, RoleSeed, RoleWait)
		}
	}
	if w := obj.Get("waitTimeout"); w != nil && !sobek.IsUndefined(w) && !sobek.IsNull(w) && w.String() != "" {
		d, err := time.ParseDuration(w.String())
		if err != nil || d <= 0 {
			return o, fmt.Errorf("setup(options): waitTimeout %q: want a positive duration such as \"5m\"", w.String())
		}
		o.wait = d
	}
	return o, nil
}

// waitBound is how long a waiting instance waits by default: the run's
// setupTimeout less 10 s, so it fails with the fixture's gap named rather
// than with the runner's bare setup timeout.
func waitBound(testOptions []byte) time.Duration {
	const margin, fallback = 10 * time.Second, 50 * time.Second // k6's default setupTimeout is 60 s
	var o struct {
		SetupTimeout string `json:"setupTimeout"`
	}
	if len(testOptions) == 0 || json.Unmarshal(testOptions, &o) != nil {
		return fallback
	}
	d, err := time.ParseDuration(o.SetupTimeout)
	if err != nil || d <= 0 {
		return fallback
	}
	return max(d-margin, min(d, time.Second))
}

// waitFixture is setup() of an instance that does not seed: it waits,
// bounded, until the seeding instance's fixture is complete on the shared
// relay and verifies it (seed.WaitComplete), writing nothing and recording
// no operations, so the merged per-op counts are those of one seed.
func (in *instance) waitFixture(l *loaded, sc *scenario.Scenario, so setupOptions) (*SetupResult, error) {
	if l.base.Embedded() {
		return nil, fmt.Errorf("seed %s: setup role %q needs a relay the instances share, and this run uses its own embedded relay (set [target])",
			l.base.File, RoleWait)
	}
	opt := seed.Options{}
	if pool, err := in.m.httpPool(); err == nil {
		opt.Transport = pool
	}
	ctx := context.Background()
	if st := in.vu.State(); st != nil {
		ctx = in.vu.Context()
	}
	wait := so.wait
	if wait == 0 {
		wait = waitBound(in.vu.TestOptions())
	}
	start := time.Now()
	in.info(fmt.Sprintf("k6/x/buzz: waiting up to %s for the fixture of run_id %q, seeded by the instance whose execution segment starts at 0",
		wait, sc.RunID))
	r, err := seed.WaitComplete(ctx, sc, opt, seed.WaitOptions{Timeout: wait})
	if err != nil {
		err = fmt.Errorf("seed %s: %w", l.base.File, err)
		if errors.Is(err, seed.ErrIncomplete) {
			err = fmt.Errorf("%w (did that instance run, and did its setup() succeed?)", err)
		}
		l.seedErr = err
		return nil, err
	}
	out := &SetupResult{RunID: sc.RunID, WSURL: sc.Target.WSURL, Communities: sc.Shape.Communities,
		Channels: r.Channels.Settled(), Members: r.Members.Settled(), Posts: r.Posts.Settled(),
		DurationMs: time.Since(start).Milliseconds(), Role: RoleWait}
	out.Existing = out.Channels + out.Members + out.Posts
	in.info(fmt.Sprintf("k6/x/buzz: the fixture of run_id %q is complete (%d channels, %d members, %d posts)",
		sc.RunID, out.Channels, out.Members, out.Posts))
	l.seedDone, l.seedRes = true, out
	return out, nil
}

// info logs through console.log.
func (in *instance) info(line string) {
	rt := in.rt()
	c := rt.Get("console")
	if c == nil || sobek.IsUndefined(c) {
		return
	}
	if fn, ok := sobek.AssertFunction(c.ToObject(rt).Get("log")); ok {
		_, _ = fn(c, rt.ToValue(line))
	}
}
