// One iteration: activation in a scenario, the exec call and the samples it emits.

package jshost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/lazyjson"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Activate puts the VU in a scenario: a fresh __ENV (global env plus the
// scenario's), tags reset to the test-wide tags plus the scenario's.
func (v *VU) Activate(sc *Scenario, exec string, env map[string]string, tags map[string]string) {
	v.scenario = sc
	v.exec = exec
	v.execFn = nil
	v.iterInScenario = 0
	merged, keys := v.b.cfg.Env, v.b.envKeys
	if len(env) > 0 {
		merged = make(map[string]string, len(v.b.cfg.Env)+len(env))
		for k, val := range v.b.cfg.Env {
			merged[k] = val
		}
		for k, val := range env {
			merged[k] = val
		}
		keys = sortedKeys(merged)
	}
	v.env = merged
	v.envVal = v.envObject(merged, keys)
	// A script that assigned __ENV made it an own global; the fresh one
	// replaces it.
	_ = v.rt.GlobalObject().Delete("__ENV")
	t := jsmodule.NewTagMap(tags)
	sys := v.b.systemTags()
	if sc != nil && sys.Scenario {
		t.Set("scenario", sc.Name)
	}
	if sys.Group {
		t.Set("group", "")
	}
	v.sys = sys
	name, start := "", time.Time{}
	if sc != nil {
		name, start = sc.Name, sc.StartTime
	}
	v.state = &jsmodule.State{
		VUID: v.id, VUIDInTest: v.idTest, Iteration: v.iterationCount(), Scenario: name, ScenarioStart: start, Stage: -1,
		Tags: t, Metadata: jsmodule.NewTagMap(nil), Phase: jsmodule.PhaseIteration,
	}
}

func (v *VU) iterationCount() int64 {
	if v.state != nil {
		return v.state.Iteration
	}
	return -1
}

// SetSetupData gives the VU setup()'s JSON; it is decoded on the first
// iteration and reused afterwards (spec §1.3).
func (v *VU) SetSetupData(raw []byte) { v.SetSetup(NewSetupData(raw)) }

// SetSetup is SetSetupData with the JSON parsed once for every VU that
// gets the same SetupData.
func (v *VU) SetSetup(sd *SetupData) {
	v.setup = sd
	v.setupDecoded = false
	v.setupVal = nil
}

// SetupData is setup()'s JSON as VUs take it. It is parsed once, on first
// use, and shared (it is immutable); each VU builds plain objects of its
// own from the parse (lazyjson.Doc.Plain), as JSON.parse would, instead of
// decoding the text again: JSON.parse of a 250-byte setup result was
// ~25 µs and 210 allocations per VU on a quiet core, ~90 µs per new human
// in a connect ramp's profile (issue 16).
type SetupData struct {
	raw  []byte
	once sync.Once
	doc  *lazyjson.Doc // nil: left to JSON.parse (invalid JSON gets its error)
}

// NewSetupData wraps setup()'s JSON (nil: no setup data).
func NewSetupData(raw []byte) *SetupData { return &SetupData{raw: raw} }

// Raw is setup()'s JSON as given (nil: no setup data).
func (sd *SetupData) Raw() []byte {
	if sd == nil {
		return nil
	}
	return sd.raw
}

// value is the setup data as a JS value of v's runtime.
func (sd *SetupData) value(v *VU) (sobek.Value, error) {
	if sd == nil || sd.raw == nil {
		return sobek.Undefined(), nil
	}
	sd.once.Do(func() {
		if json.Valid(sd.raw) {
			sd.doc, _ = lazyjson.Parse(sd.raw) // a number out of range: nil
		}
	})
	if sd.doc == nil {
		return v.decode(sd.raw)
	}
	return sd.doc.Plain(v.rt), nil
}

func (v *VU) decode(raw []byte) (sobek.Value, error) {
	if raw == nil {
		return sobek.Undefined(), nil
	}
	parse, _ := sobek.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("parse"))
	val, err := parse(sobek.Undefined(), v.rt.ToValue(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("decoding JSON data: %w", err)
	}
	return val, nil
}

// IterationResult says how an iteration ended.
type IterationResult struct {
	// Full is false when the context ended the iteration early
	// (interrupted): no iteration metrics are emitted then.
	Full bool
	// Err is the exception, if the function threw (already logged).
	Err error
}

// Iteration is what the executor tells the VU about one iteration.
type Iteration struct {
	// InInstance and InTest are scenario.iterationInInstance/InTest.
	InInstance, InTest int64
	// Stage and StageName are scenario.stage (our extension); Stage < 0
	// means the scenario has no stages.
	Stage     int
	StageName string
	// Due is when an arrival-rate start was planned (State.IterationDue).
	Due time.Time
}

// RunIteration runs the activated exec function once.
func (v *VU) RunIteration(ctx context.Context, it Iteration) IterationResult {
	if v.state == nil {
		v.Activate(nil, "default", nil, nil)
	}
	st := v.state
	st.Iteration++
	v.iter = it
	st.Stage, st.StageName = it.Stage, it.StageName
	st.IterationDue = it.Due
	if v.sys.VU {
		st.Metadata.Set("vu", strconv.FormatUint(v.id, 10))
	}
	if v.sys.Iter {
		st.Metadata.Set("iter", strconv.FormatInt(st.Iteration, 10))
	}
	if !v.setupDecoded {
		val, err := v.setup.value(v)
		if err != nil {
			return IterationResult{Full: true, Err: err}
		}
		v.setupVal, v.setupDecoded = val, true
	}
	if v.execFn == nil {
		fn, ok := sobek.AssertFunction(v.exportValue(v.exec))
		if !ok {
			return IterationResult{Err: fmt.Errorf("function %q not found in exports", v.exec)}
		}
		v.execFn = fn
	}
	start := time.Now()
	_, err := v.callFn(ctx, v.execFn, v.setupVal)
	end := time.Now()
	v.iterInScenario++
	v.emitData(end)
	if ctx.Err() != nil && (err == nil || errors.Is(err, errInterrupted)) {
		return IterationResult{Full: false}
	}
	var ab *AbortError
	if errors.As(err, &ab) {
		// k6 still counts an iteration that called test.abort() (errata 5).
		v.emitIteration(start, end)
		return IterationResult{Full: true, Err: ab}
	}
	if err != nil && !errors.Is(err, errInterrupted) {
		v.logException(err)
	}
	v.emitIteration(start, end)
	return IterationResult{Full: true, Err: err}
}

func (v *VU) logException(err error) {
	fields := []string{"source", "stacktrace"}
	if v.scenario != nil {
		fields = append(fields, "scenario", v.scenario.Name, "executor", v.scenario.Executor)
	}
	msg, hint := ExceptionText(err)
	if hint != "" {
		fields = append(fields, "hint", hint)
	}
	v.b.cfg.Logger.Log(LevelError, msg, fields...)
}

// ExceptionText is a thrown exception as k6 v2.2.0 logs it (observed): its
// stack trace ending in a newline, hinted "script exception".
func ExceptionText(err error) (msg, hint string) {
	msg = err.Error()
	var ex *sobek.Exception
	if errors.As(err, &ex) {
		if !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		return msg, "script exception"
	}
	return msg, ""
}

func (v *VU) emitIteration(start, end time.Time) {
	tags := v.state.Tags.TagSet()
	md := v.metadata()
	v.buf.AddAll([]metrics.Sample{
		{Metric: v.b.metrics.Iterations, Time: end, Value: 1, Tags: tags, Metadata: md},
		{Metric: v.b.metrics.IterationDuration, Time: end, Value: ms(end.Sub(start)), Tags: tags, Metadata: md},
	})
}

func (v *VU) metadata() metrics.TagSet {
	if v.state == nil || v.state.Metadata == nil || v.state.Metadata.Len() == 0 {
		return metrics.TagSet{}
	}
	return v.state.Metadata.TagSet()
}

func (v *VU) emitData(t time.Time) {
	if v.state == nil {
		return
	}
	tags := v.state.Tags.TagSet()
	v.buf.AddAll([]metrics.Sample{
		{Metric: v.b.metrics.DataSent, Time: t, Value: float64(v.BytesSent.Swap(0)), Tags: tags},
		{Metric: v.b.metrics.DataReceived, Time: t, Value: float64(v.BytesReceived.Swap(0)), Tags: tags},
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Scenario is what k6/execution's `scenario` shows about the scenario a VU is
// active in. Progress may be nil.
type Scenario struct {
	Name      string
	Executor  string
	StartTime time.Time
	Progress  func() float64
}
