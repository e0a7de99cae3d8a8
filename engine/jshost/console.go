package jshost

import (
	"strings"

	"github.com/grafana/sobek"
)

// newConsole builds the console object: log/info/warn/error/debug go to the
// run's logger at their level with source=console.
func newConsole(v *VU) *sobek.Object {
	o := v.rt.NewObject()
	mk := func(level Level) func(sobek.FunctionCall) sobek.Value {
		return func(call sobek.FunctionCall) sobek.Value {
			parts := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				parts[i] = v.stringify(a)
			}
			v.b.cfg.Logger.Log(level, strings.Join(parts, " "), "source", "console")
			return sobek.Undefined()
		}
	}
	_ = o.Set("log", mk(LevelInfo))
	_ = o.Set("info", mk(LevelInfo))
	_ = o.Set("warn", mk(LevelWarn))
	_ = o.Set("error", mk(LevelError))
	_ = o.Set("debug", mk(LevelDebug))
	return o
}

// helper for console formatting of values.
func (v *VU) stringify(val sobek.Value) string {
	if val == nil || sobek.IsUndefined(val) {
		return "undefined"
	}
	if o, ok := val.(*sobek.Object); ok {
		if _, isFn := sobek.AssertFunction(o); isFn {
			return o.String()
		}
		if st := o.Get("stack"); st != nil && !sobek.IsUndefined(st) {
			if cls := o.ClassName(); cls == "Error" {
				return strings.TrimRight(st.String(), "\n")
			}
		}
		stringify, _ := sobek.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("stringify"))
		if s, err := stringify(sobek.Undefined(), o); err == nil && !sobek.IsUndefined(s) {
			return s.String()
		}
	}
	return val.String()
}
