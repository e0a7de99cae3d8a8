package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/lazyjson"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// scenarioObject is what buzz.load() returns to a VU. Its members become
// JS values as the script reads them (most VUs call one or two of its ~20
// methods; all of them built were ~7 KB of every VU).
func (in *instance) scenarioObject(l *loaded) *sobek.Object {
	return jsmodule.NewLazyObject(in.rt(), scenarioNames, func(i int) sobek.Value {
		return scenarioMembers[i].build(in, l)
	})
}

// scenarioMember is one property of the scenario object.
type scenarioMember struct {
	name  string
	build func(in *instance, l *loaded) sobek.Value
}

// method makes a member that is a function.
func method(name string, fn func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value) scenarioMember {
	return scenarioMember{name: name, build: func(in *instance, l *loaded) sobek.Value {
		return in.rt().ToValue(func(c sobek.FunctionCall) sobek.Value { return fn(in, l, c) })
	}}
}

// scenarioMembers are the scenario object's properties, in their order
// (the low-level API's are in lowlevel.go).
var scenarioMembers = append([]scenarioMember{
	{"runId", func(in *instance, l *loaded) sobek.Value { return in.rt().ToValue(l.base.RunID) }},
	{"file", func(in *instance, l *loaded) sobek.Value { return in.rt().ToValue(l.base.File) }},
	// after buzz.load's desktopMode override
	{"desktopMode", func(in *instance, l *loaded) sobek.Value { return in.rt().ToValue(l.base.Desktop.Mode) }},
	method("options", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value { return in.jsOptions(l, c.Argument(0)) }),
	method("thresholds", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value {
		ops, err := in.fromJS(c.Argument(0))
		list, ok := strs(ops)
		if err != nil || !ok {
			in.throw(errors.New("thresholds(ops, delayAbortEval): ops must be an array of op names"))
		}
		delay := ""
		if d := c.Argument(1); !sobek.IsUndefined(d) && !sobek.IsNull(d) {
			delay = d.String()
		}
		return in.toJS(k6options.OpThresholds(l.base, list, delay))
	}),
	method("peak", func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value {
		c := l.base.CountsAt(l.base.PeakUsers(), l.shard)
		out := map[string]int{}
		for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
			out[k.String()] = c[k]
		}
		return in.toJS(out)
	}),
	method("limits", func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value {
		return in.toJS(report.LimitsOf(l.base.Abort))
	}),
	method("steps", func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value { return in.toJS(stepsJSON(l)) }),
	method("setup", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value { return in.jsSetup(l, c.Argument(0)) }),
	method("teardown", func(in *instance, _ *loaded, _ sobek.FunctionCall) sobek.Value {
		if err := in.m.Close(); err != nil {
			in.throw(err)
		}
		return sobek.Undefined()
	}),
	population(k6options.Populations[0]), population(k6options.Populations[1]), population(k6options.Populations[2]), population(k6options.Populations[3]),
	method("run", func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value {
		st := in.vu.State()
		if st == nil || st.Phase != jsmodule.PhaseIteration {
			in.throw(errors.New("run() runs clients only in VU code"))
		}
		p, ok := k6options.PopulationOf(st.Scenario)
		if !ok {
			in.throw(fmt.Errorf("run(): scenario %q is not one of options()'s populations (humans, desktop, agents, hot_authors)", st.Scenario))
		}
		if err := in.runPopulation(l, p); err != nil {
			in.throw(err)
		}
		return sobek.Undefined()
	}),
	method("report", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value {
		return in.jsReport(l, c.Argument(0), c.Argument(1))
	}),
}, lowLevelMembers...)

// scenarioNames are scenarioMembers' names.
var scenarioNames = func() []string {
	names := make([]string, len(scenarioMembers))
	for i, m := range scenarioMembers {
		names[i] = m.name
	}
	return names
}()

// population is the method that runs one population's clients (sc.human()).
func population(p k6options.Population) scenarioMember {
	return method(p.Exec, func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value {
		if err := in.runPopulation(l, p); err != nil {
			in.throw(err)
		}
		return sobek.Undefined()
	})
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
	s, err := in.jsonOf(v)
	if err != nil || s == "" {
		return nil, err
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (in *instance) jsOptions(l *loaded, overrides sobek.Value) sobek.Value {
	// Built once per run: every VU's init code asks for them.
	l.optsOnce.Do(func() { l.opts, l.optsWarn = k6options.Build(l.base, l.shard) })
	built, warnings := l.opts, l.optsWarn
	if len(warnings) > 0 {
		// Once per run (the first init), through the script's console.
		l.warnOnce.Do(func() { in.warn(warnings) })
	}
	ovJSON, err := in.jsonOf(overrides)
	if err != nil {
		in.throw(fmt.Errorf("options(): %w", err))
	}
	if in.vu.TestOptions() != nil {
		// A VU after the first init: the host replaces each consolidated
		// key of its options export, so what this returns is mostly never
		// read. It is the merged options' JSON, made once per run (and
		// overrides), as a lazily built object: building it whole was
		// ~0.8 ms of CPU and all of its ~150 thresholds in every VU.
		doc, err := l.optionsDoc(ovJSON, func() ([]byte, error) {
			out, err := mergeOverrides(built, ovJSON)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		})
		if err != nil {
			in.throw(err)
		}
		return doc.Value(in.rt())
	}
	out, err := mergeOverrides(built, ovJSON)
	if err != nil {
		in.throw(err)
	}
	return in.toJS(out)
}

// mergeOverrides merges options(overrides)' JSON ("" for none) into the
// built options.
func mergeOverrides(built *k6options.Options, ovJSON string) (map[string]any, error) {
	var ov any
	if ovJSON != "" {
		if err := json.Unmarshal([]byte(ovJSON), &ov); err != nil {
			return nil, fmt.Errorf("options(): %w", err)
		}
	}
	m, _ := ov.(map[string]any)
	if ov != nil && m == nil {
		return nil, errors.New("options(overrides): overrides must be an object")
	}
	return k6options.Merge(built, m)
}

// maxOptionDocs bounds the per-run cache of options() results (scripts
// call it with one set of overrides, or none).
const maxOptionDocs = 8

// optionsDoc is options()'s result for these overrides, parsed once.
func (l *loaded) optionsDoc(ovJSON string, build func() ([]byte, error)) (*lazyjson.Doc, error) {
	l.optsDocMu.Lock()
	doc := l.optsDocs[ovJSON]
	l.optsDocMu.Unlock()
	if doc != nil {
		return doc, nil
	}
	raw, err := build()
	if err != nil {
		return nil, err
	}
	if doc, err = lazyjson.Parse(raw); err != nil {
		return nil, err
	}
	l.optsDocMu.Lock()
	if l.optsDocs == nil {
		l.optsDocs = map[string]*lazyjson.Doc{}
	}
	if len(l.optsDocs) < maxOptionDocs {
		l.optsDocs[ovJSON] = doc
	}
	l.optsDocMu.Unlock()
	return doc, nil
}

// jsonOf is a JS value's JSON ("" for undefined and null).
func (in *instance) jsonOf(v sobek.Value) (string, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return "", nil
	}
	rt := in.rt()
	str, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	s, err := str(sobek.Undefined(), v)
	if err != nil {
		return "", err
	}
	if sobek.IsUndefined(s) {
		return "", fmt.Errorf("%s has no JSON form", v.String())
	}
	return s.String(), nil
}

// SetupResult is what sc.setup() returns (report.SetupResult).
type SetupResult = report.SetupResult

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
		opt.Sink = &setupSink{l: l, met: in.met, push: in.vu.Metrics().Push, base: st.Tags.TagSet(), seed: true}
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
			// A setting the run lacks: invalid configuration (exit 104),
			// one line, as seed and teardown say it (issue 47 item 3).
			return nil, configerr.New(fmt.Errorf("seed %s: %w", l.base.File, err))
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
	opt.Progress = newSeedProgress(in.m.opts.Console, nil).update
	r, err := seed.Seed(ctx, sc, opt)
	if err != nil {
		err = fmt.Errorf("seed %s: %w", l.base.File, err)
		if errors.Is(err, seed.ErrRelayMembership) {
			// The target, not the load: the run stops as a preflight failure.
			pe := &preflight.Error{What: "relay membership (NIP-43 kind 9030)", URL: sc.Target.HTTPURL, Err: err}
			l.m.failPreflight(pe)
			err = pe
		}
		l.seedErr = err
		return nil, err
	}
	out := &SetupResult{RunID: sc.RunID, Embedded: l.base.Embedded(), WSURL: sc.Target.WSURL,
		Communities: len(r.Communities), Channels: r.Channels.Settled(), Members: r.Members.Settled(),
		Posts: r.Posts.Settled(), DurationMs: r.Duration.Milliseconds(), Role: RoleSeed, MemberTags: r.MemberTagsApplied,
		RelayMembers: r.RelayMembers.Created + r.RelayMembers.Existing}
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
