package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// scenarioObject is what buzz.load() returns to a VU.
func (in *instance) scenarioObject(l *loaded) *sobek.Object {
	rt := in.rt()
	o := rt.NewObject()
	set := func(name string, fn func(sobek.FunctionCall) sobek.Value) { _ = o.Set(name, fn) }
	_ = o.Set("runId", l.base.RunID)
	_ = o.Set("file", l.base.File)
	_ = o.Set("desktopMode", l.base.Desktop.Mode) // after buzz.load's desktopMode override
	set("options", func(c sobek.FunctionCall) sobek.Value { return in.jsOptions(l, c.Argument(0)) })
	set("thresholds", func(c sobek.FunctionCall) sobek.Value {
		ops, err := in.fromJS(c.Argument(0))
		list, ok := strs(ops)
		if err != nil || !ok {
			in.throw(errors.New("thresholds(ops, delayAbortEval): ops must be an array of op names"))
		}
		delay := ""
		if d := c.Argument(1); !sobek.IsUndefined(d) && !sobek.IsNull(d) {
			delay = d.String()
		}
		return in.toJS(OpThresholds(l.base, list, delay))
	})
	set("peak", func(sobek.FunctionCall) sobek.Value {
		c := l.base.CountsAt(l.base.PeakUsers(), l.shard)
		out := map[string]int{}
		for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
			out[k.String()] = c[k]
		}
		return in.toJS(out)
	})
	set("limits", func(sobek.FunctionCall) sobek.Value { return in.toJS(limitsOf(l.base.Abort)) })
	set("steps", func(sobek.FunctionCall) sobek.Value { return in.toJS(stepsJSON(l)) })
	set("setup", func(c sobek.FunctionCall) sobek.Value { return in.jsSetup(l, c.Argument(0)) })
	set("teardown", func(sobek.FunctionCall) sobek.Value {
		if err := in.m.Close(); err != nil {
			in.throw(err)
		}
		return sobek.Undefined()
	})
	for _, p := range Populations {
		p := p
		set(p.Exec, func(sobek.FunctionCall) sobek.Value {
			if err := in.runPopulation(l, p); err != nil {
				in.throw(err)
			}
			return sobek.Undefined()
		})
	}
	set("run", func(sobek.FunctionCall) sobek.Value {
		st := in.vu.State()
		if st == nil || st.Phase != jsmodule.PhaseIteration {
			in.throw(errors.New("run() runs clients only in VU code"))
		}
		p, ok := populationOf(st.Scenario)
		if !ok {
			in.throw(fmt.Errorf("run(): scenario %q is not one of options()'s populations (humans, desktop, agents, hot_authors)", st.Scenario))
		}
		if err := in.runPopulation(l, p); err != nil {
			in.throw(err)
		}
		return sobek.Undefined()
	})
	set("report", func(c sobek.FunctionCall) sobek.Value { return in.jsReport(l, c.Argument(0), c.Argument(1)) })
	in.lowLevel(l, o)
	return o
}

// toJS turns a Go value into plain JS objects (through JSON), so scripts
// can change what they get.
func (in *instance) toJS(v any) sobek.Value {
	raw, err := json.Marshal(v)
	if err != nil {
		in.throw(err)
	}
	rt := in.rt()
	parse, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
	out, err := parse(sobek.Undefined(), rt.ToValue(string(raw)))
	if err != nil {
		in.throw(err)
	}
	return out
}

// fromJS exports a JS value to plain Go data (through JSON).
func (in *instance) fromJS(v sobek.Value) (any, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil, nil
	}
	rt := in.rt()
	str, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	s, err := str(sobek.Undefined(), v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal([]byte(s.String()), &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (in *instance) jsOptions(l *loaded, overrides sobek.Value) sobek.Value {
	// Built once per run: every VU's init code asks for them.
	l.optsOnce.Do(func() { l.opts, l.optsWarn = BuildOptions(l.base, l.shard) })
	built, warnings := l.opts, l.optsWarn
	if len(warnings) > 0 {
		// Once per run (the first init), through the script's console.
		l.warnOnce.Do(func() { in.warn(warnings) })
	}
	ov, err := in.fromJS(overrides)
	if err != nil {
		in.throw(fmt.Errorf("options(): %w", err))
	}
	m, _ := ov.(map[string]any)
	if ov != nil && m == nil {
		in.throw(errors.New("options(overrides): overrides must be an object"))
	}
	out, err := MergeOptions(built, m)
	if err != nil {
		in.throw(err)
	}
	return in.toJS(out)
}

// SetupResult is what sc.setup() returns (setup data: small and JSON-able).
type SetupResult struct {
	RunID       string `json:"run_id"`
	Embedded    bool   `json:"embedded"`
	WSURL       string `json:"ws_url"`
	Communities int    `json:"communities"`
	Channels    int    `json:"channels"`
	Members     int    `json:"members"`
	Posts       int    `json:"posts"`
	Created     int    `json:"created"`
	Existing    int    `json:"existing"`
	DurationMs  int64  `json:"duration_ms"`
	// Role is what this instance did: "seed" (seeded, idempotently) or
	// "wait" (waited for the seeding instance, then verified; wrote nothing).
	Role string `json:"role"`
}

// jsSetup seeds the scenario (idempotently: a rerun adds nothing), or in a
// distributed run's other instances waits for it (SeedRole), and returns a
// summary.
func (in *instance) jsSetup(l *loaded, opts sobek.Value) sobek.Value {
	so, err := parseSetupOptions(in.rt(), opts)
	if err != nil {
		in.throw(err)
	}
	res, err := in.seed(l, so)
	if err != nil {
		in.throw(err)
	}
	return in.toJS(res)
}

func (in *instance) seed(l *loaded, so setupOptions) (*SetupResult, error) {
	l.seedMu.Lock()
	defer l.seedMu.Unlock()
	if l.seedDone {
		return l.seedRes, nil
	}
	sc, err := l.target()
	if err != nil {
		return nil, err
	}
	role := so.role
	if role == RoleAuto {
		tup, err := in.m.segmentTuple(in)
		if err != nil {
			return nil, err
		}
		role = SeedRole(l.base.Embedded(), tup.Segment(), l.shard)
	}
	if role == RoleWait {
		// The deployment, not community 0: its host may not be seeded yet.
		ctx := context.Background()
		if st := in.vu.State(); st != nil {
			ctx = in.vu.Context()
		}
		if err := l.checkTarget(ctx, sc, true, nil, ""); err != nil {
			l.seedErr = err
			return nil, err
		}
		return in.waitFixture(l, sc, so)
	}
	opt := seed.Options{}
	if st := in.vu.State(); st != nil {
		opt.Sink = &setupSink{l: l, met: in.met, push: in.vu.Metrics().Push, base: st.Tags.TagSet()}
	}
	if pool, err := in.m.httpPool(); err == nil {
		opt.Transport = pool
	}
	if l.base.Embedded() {
		r, err := in.m.embedded()
		if err != nil {
			return nil, err
		}
		opt.Operator, opt.OperatorOrigin = r.OperatorKeys(), r.OperatorOrigin()
	} else if sc.Target.CommunityHostTemplate != "" {
		k, err := sc.OperatorKey(in.m.opts.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", l.base.File, err)
		}
		opt.Operator = k
	}
	ctx := context.Background()
	if st := in.vu.State(); st != nil {
		ctx = in.vu.Context()
	}
	if err := l.checkTarget(ctx, sc, true, opt.Operator, opt.OperatorOrigin); err != nil {
		l.seedErr = err
		return nil, err
	}
	r, err := seed.Seed(ctx, sc, opt)
	if err != nil {
		err = fmt.Errorf("seed %s: %w", l.base.File, err)
		l.seedErr = err
		return nil, err
	}
	out := &SetupResult{RunID: sc.RunID, Embedded: l.base.Embedded(), WSURL: sc.Target.WSURL,
		Communities: len(r.Communities), Channels: r.Channels.Settled(), Members: r.Members.Settled(),
		Posts: r.Posts.Settled(), DurationMs: r.Duration.Milliseconds(), Role: RoleSeed}
	for _, c := range []seed.Counts{r.Channels, r.Members, r.Posts} {
		out.Created += c.Created
		out.Existing += c.Existing
	}
	l.seedDone, l.seedRes = true, out
	return out, nil
}

// warn logs through console.warn.
func (in *instance) warn(lines []string) {
	rt := in.rt()
	c := rt.Get("console")
	if c == nil || sobek.IsUndefined(c) {
		return
	}
	fn, ok := sobek.AssertFunction(c.ToObject(rt).Get("warn"))
	if !ok {
		return
	}
	for _, l := range lines {
		_, _ = fn(c, rt.ToValue("k6/x/buzz: "+l))
	}
}
