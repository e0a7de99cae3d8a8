package jshost

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// newExecutionModule is k6/execution (spec §1.8): a default export whose
// properties build a fresh read-only object on every read. It is a dynamic
// object rather than four getter functions: those were ~2 KB of every VU
// that imports k6/execution.
func newExecutionModule(mvu jsmodule.VU) (jsmodule.Instance, error) {
	v, err := hostVU(mvu)
	if err != nil {
		return nil, err
	}
	return jsmodule.StaticExports{Default: v.rt.NewDynamicObject(execObject{v})}, nil
}

// execObject is k6/execution's default export.
type execObject struct{ v *VU }

var execKeys = []string{"instance", "scenario", "test", "vu"}

func (e execObject) Get(key string) sobek.Value {
	switch key {
	case "instance":
		return e.v.execInstance()
	case "scenario":
		return e.v.execScenario()
	case "test":
		return e.v.execTest()
	case "vu":
		return e.v.execVU()
	}
	return nil
}

func (e execObject) Set(string, sobek.Value) bool { return false }

func (e execObject) Has(key string) bool { return slices.Contains(execKeys, key) }

func (e execObject) Delete(key string) bool { return !e.Has(key) }

func (e execObject) Keys() []string { return execKeys }

// frozen builds an object of read-only properties.
func (v *VU) frozen(props [][2]any) *sobek.Object {
	o := v.rt.NewObject()
	for _, p := range props {
		_ = o.DefineDataProperty(p[0].(string), v.rt.ToValue(p[1]), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_TRUE)
	}
	return o
}

func (v *VU) execInstance() sobek.Value {
	if v.state == nil || v.state.Phase == jsmodule.PhaseTeardown {
		v.throw(errors.New("getting instance information in the init context is not supported"))
	}
	s := v.b.control.Instance()
	return v.frozen([][2]any{
		{"currentTestRunDuration", ms(s.CurrentTestRunDuration)},
		{"iterationsCompleted", s.IterationsCompleted},
		{"iterationsInterrupted", s.IterationsInterrupted},
		{"vusActive", s.VUsActive},
		{"vusInitialized", s.VUsInitialized},
	})
}

func (v *VU) execScenario() sobek.Value {
	if v.state == nil || v.state.Phase != jsmodule.PhaseIteration || v.scenario == nil {
		v.throw(errors.New("getting scenario information outside of the VU context is not supported"))
	}
	sc := v.scenario
	progress := 0.0
	if sc.Progress != nil {
		progress = sc.Progress()
	}
	props := [][2]any{
		{"name", sc.Name},
		{"executor", sc.Executor},
		{"startTime", sc.StartTime.UnixMilli()},
		{"progress", progress},
		{"iterationInInstance", v.iter.InInstance},
		{"iterationInTest", v.iter.InTest},
	}
	if v.iter.Stage >= 0 {
		props = append(props, [2]any{"stage", v.frozen([][2]any{{"index", v.iter.Stage}, {"name", v.iter.StageName}})})
	} else {
		props = append(props, [2]any{"stage", nil})
	}
	return v.frozen(props)
}

func (v *VU) execTest() sobek.Value {
	rt := v.rt
	o := rt.NewObject()
	_ = o.Set("abort", func(call sobek.FunctionCall) sobek.Value {
		reason := ""
		if a := call.Argument(0); !sobek.IsUndefined(a) {
			reason = a.String()
		}
		ab := &AbortError{Reason: reason}
		v.b.cfg.Logger.Log(LevelError, ab.Error(), "source", "k6/execution")
		v.b.control.Abort(reason)
		rt.Interrupt(ab)
		return sobek.Undefined()
	})
	_ = o.Set("fail", func(call sobek.FunctionCall) sobek.Value {
		if v.state == nil {
			v.throw(errors.New("test.fail() can't be called in the init context"))
		}
		reason := ""
		if a := call.Argument(0); !sobek.IsUndefined(a) {
			reason = a.String()
		}
		v.b.cfg.Logger.Log(LevelError, "test marked as failed: "+reason, "source", "k6/execution")
		v.b.control.Fail(reason)
		return sobek.Undefined()
	})
	_ = o.DefineAccessorProperty("options", rt.ToValue(func(sobek.FunctionCall) sobek.Value {
		if v.state == nil {
			v.throw(errors.New("getting test options in the init context is not supported"))
		}
		return v.testOptions()
	}), nil, sobek.FLAG_FALSE, sobek.FLAG_TRUE)
	return o
}

// testOptions is the merged options as a deep-frozen object; the shortcut
// fields are gone because they became scenarios.
func (v *VU) testOptions() sobek.Value {
	raw := v.b.mergedOptions.Load()
	var m map[string]any
	if raw != nil {
		_ = json.Unmarshal(*raw, &m)
	} else if v.b.Options != nil {
		_ = json.Unmarshal(v.b.Options, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	for _, k := range []string{"vus", "iterations", "duration", "stages"} {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	val, err := v.decode(b)
	if err != nil {
		v.throw(err)
	}
	freeze, _ := sobek.AssertFunction(v.rt.ToValue(deepFreezeSrc(v.rt)))
	out, err := freeze(sobek.Undefined(), val)
	if err != nil {
		v.throw(err)
	}
	return out
}

func deepFreezeSrc(rt *sobek.Runtime) sobek.Value {
	v, err := rt.RunString(`(function f(o){ if (o && typeof o === "object") { Object.values(o).forEach(f); Object.freeze(o); } return o; })`)
	if err != nil {
		panic(err)
	}
	return v
}

func (v *VU) execVU() sobek.Value {
	if v.state == nil {
		v.throw(errors.New("getting VU information in the init context is not supported"))
	}
	rt := v.rt
	tags := rt.NewDynamicObject(&tagObject{vu: v, m: v.state.Tags})
	meta := rt.NewDynamicObject(&tagObject{vu: v, m: v.state.Metadata})
	iter := v.state.Iteration
	if iter < 0 {
		iter = 0
	}
	return v.frozen([][2]any{
		{"idInInstance", v.state.VUID},
		{"idInTest", v.state.VUIDInTest},
		{"iterationInInstance", iter},
		{"iterationInScenario", v.iterInScenario},
		{"tags", tags},
		{"metrics", v.frozen([][2]any{{"tags", tags}, {"metadata", meta}})},
	})
}

// tagObject exposes a VU's live tag map to JS: values read back as strings.
type tagObject struct {
	vu *VU
	m  *jsmodule.TagMap
}

func (t *tagObject) Get(k string) sobek.Value {
	if s, ok := t.m.Get(k); ok {
		return t.vu.rt.ToValue(s)
	}
	return nil
}

func (t *tagObject) Set(k string, val sobek.Value) bool {
	s, err := tagValue(val)
	if err != nil {
		panic(t.vu.rt.NewTypeError(err.Error()))
	}
	t.m.Set(k, s)
	return true
}

func (t *tagObject) Has(k string) bool { _, ok := t.m.Get(k); return ok }
func (t *tagObject) Delete(k string) bool {
	t.m.Delete(k)
	return true
}
func (t *tagObject) Keys() []string { return t.m.Keys() }
