package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/modules/scenario"
)

// instance is one VU's `k6/x/buzz`.
type instance struct {
	m     *Module
	vu    jsmodule.VU
	met   *metricSet
	slots map[slotKey]*slot
	// groups: a VU's humans when population.humans_per_vu > 1 (group.go).
	groups map[slotKey][]*slot
	// dueUsed is the arrival-rate due time a low-level call already took
	// (iterDue): only an iteration's first call was due then.
	dueUsed time.Time
}

// NewInstance implements jsmodule.Module.
func (m *Module) NewInstance(vu jsmodule.VU) (jsmodule.Instance, error) {
	met, err := m.metrics(vu.Metrics().Registry())
	if err != nil {
		return nil, err
	}
	return &instance{m: m, vu: vu, met: met, slots: map[slotKey]*slot{}, groups: map[slotKey][]*slot{}}, nil
}

// Exports implements jsmodule.Instance.
func (in *instance) Exports() jsmodule.Exports {
	named := map[string]any{
		"load":    in.jsLoad,
		"nip98":   in.jsNIP98,
		"version": Version,
	}
	return jsmodule.Exports{Named: named}
}

func (in *instance) rt() *sobek.Runtime { return in.vu.Runtime() }

func (in *instance) throw(err error) {
	panic(in.rt().NewGoError(err))
}

// jsLoad is buzz.load(path, {shard, desktopMode, expect}): init code only.
func (in *instance) jsLoad(call sobek.FunctionCall) sobek.Value {
	env := in.vu.InitEnv()
	if env == nil {
		in.throw(errors.New("buzz.load() is only available in init code (the top level of the script)"))
	}
	path := call.Argument(0)
	if sobek.IsUndefined(path) || path.String() == "" {
		in.throw(errors.New("buzz.load(path): path is required, e.g. buzz.load('./local-smoke.toml')"))
	}
	p := path.String()
	var lo loadOptions
	if o := call.Argument(1); !sobek.IsUndefined(o) && !sobek.IsNull(o) {
		obj := o.ToObject(in.rt())
		if s := obj.Get("shard"); s != nil && !sobek.IsUndefined(s) && !sobek.IsNull(s) && s.String() != "" {
			sh, err := ParseShard(s.String())
			if err != nil {
				in.throw(fmt.Errorf("buzz.load(%q): %w", p, err))
			}
			lo.shard = sh
		}
		if s := obj.Get("desktopMode"); s != nil && !sobek.IsUndefined(s) && !sobek.IsNull(s) {
			mode, err := ParseDesktopMode(s.String())
			if err != nil {
				in.throw(fmt.Errorf("buzz.load(%q): %w", p, err))
			}
			lo.desktopMode = mode
		}
		if s := obj.Get("expect"); s != nil && !sobek.IsUndefined(s) && !sobek.IsNull(s) {
			rules, err := parseExpectOption(s.Export())
			if err != nil {
				in.throw(fmt.Errorf("buzz.load(%q): %w", p, err))
			}
			lo.expect = rules
		}
		if s := obj.Get("drills"); s != nil && !sobek.IsUndefined(s) && !sobek.IsNull(s) {
			ds, err := parseDrillsOption(s.Export())
			if err != nil {
				in.throw(fmt.Errorf("buzz.load(%q): %w", p, err))
			}
			lo.drills = ds
		}
	}
	if cli := in.m.opts.Shard; cli.Count > 1 {
		// --shard is the default; a script's own shard must agree with it.
		if lo.shard.Count > 0 && lo.shard != cli {
			in.throw(fmt.Errorf("buzz.load(%q): option shard %d/%d contradicts --shard %d/%d", p,
				lo.shard.Index, lo.shard.Count, cli.Index, cli.Count))
		}
		lo.shard = cli
	}
	data, err := env.Open(p)
	if err != nil {
		in.throw(fmt.Errorf("buzz.load(%q): %w", p, err))
	}
	l, err := in.m.load(p, data, lo)
	if err != nil {
		// A scenario that does not validate (or bad expect rules) is
		// invalid configuration: exit 104 with its problems listed, as an
		// invalid option is, not a script exception (issue 26 item 7).
		if se := (*scenario.Error)(nil); errors.As(err, &se) {
			in.throw(configerr.New(err))
		}
		in.throw(err)
	}
	return in.scenarioObject(l)
}

// ParseDesktopMode checks buzz.load's desktopMode option: "" keeps the
// file's [desktop].mode, "legacy" or "current" replaces it.
func ParseDesktopMode(s string) (string, error) {
	switch s {
	case "", scenario.ModeLegacy, scenario.ModeCurrent:
		return s, nil
	}
	return "", fmt.Errorf("option desktopMode %q: want %q or %q (or empty to keep the file's [desktop].mode)",
		s, scenario.ModeLegacy, scenario.ModeCurrent)
}

// ParseShard parses "i/n" (0 ≤ i < n), buzz-loadgen's --shard.
func ParseShard(s string) (scenario.Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	var i, n int
	if ok {
		_, err1 := fmt.Sscanf(a, "%d", &i)
		_, err2 := fmt.Sscanf(b, "%d", &n)
		ok = err1 == nil && err2 == nil && fmt.Sprint(i) == a && fmt.Sprint(n) == b
	}
	if !ok || n < 1 || i < 0 || i >= n {
		return scenario.Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return scenario.Shard{Index: i, Count: n}, nil
}

// scenarioStart is when the active scenario's timeline started; without it
// (a host that does not say), the start of the iteration's stage.
func (in *instance) scenarioStart(l *loaded, st *jsmodule.State) (time.Time, error) {
	if !st.ScenarioStart.IsZero() {
		return st.ScenarioStart, nil
	}
	now := time.Now()
	if st.Stage >= 0 {
		step := st.Stage / 2
		if step < len(l.plan) {
			off := l.plan[step].Start
			if st.Stage%2 == 1 {
				off = l.plan[step].RampEnd
			}
			return now.Add(-off), nil
		}
	}
	return now, nil
}

// globalSlot maps a local slot to the whole run's slot through the
// execution segment the run was started with (none: itself).
func (m *Module) globalSlot(in *instance, local int64) (int64, error) {
	tup, err := m.segmentTuple(in)
	if err != nil {
		return 0, err
	}
	return tup.GlobalIndex(local), nil
}

// segmentTuple is the execution segment the run was started with, read
// once from the VU's test options (none: the full tuple).
func (m *Module) segmentTuple(in *instance) (*segment.Tuple, error) {
	m.segOnce.Do(func() {
		m.tuple = segment.FullTuple()
		raw := in.vu.TestOptions()
		if raw == nil {
			return
		}
		var o struct {
			Segment  *string `json:"executionSegment"`
			Sequence *string `json:"executionSegmentSequence"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			m.segErr = fmt.Errorf("reading the test options: %w", err)
			return
		}
		var segStr, seqStr string
		if o.Segment != nil {
			segStr = *o.Segment
		}
		if o.Sequence != nil {
			seqStr = *o.Sequence
		}
		if segStr == "" && seqStr == "" {
			return
		}
		seg, err := segment.ParseSegment(segStr)
		if err != nil {
			m.segErr = err
			return
		}
		seq, err := segment.ParseSequence(seqStr)
		if err != nil {
			m.segErr = err
			return
		}
		m.tuple, m.segErr = segment.NewTuple(seg, seq)
	})
	if m.segErr != nil {
		return nil, fmt.Errorf("execution segment: %w", m.segErr)
	}
	return m.tuple, nil
}
