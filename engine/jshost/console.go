package jshost

import (
	"strings"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// newConsole builds the console object: log/info/warn/error/debug go to the
// run's logger at their level with source=console. Each method becomes a JS
// function when first read: most VUs never log, and five functions were
// ~2.5 KB of every idle VU.
func newConsole(v *VU) *sobek.Object {
	return jsmodule.NewLazyObject(v.rt, consoleMethods, func(i int) sobek.Value {
		level := consoleLevels[i]
		return v.rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
			parts := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				parts[i] = v.stringify(a)
			}
			v.b.cfg.Logger.Log(level, strings.Join(parts, " "), "source", "console")
			return sobek.Undefined()
		})
	})
}

// consoleMethods are the console's methods, logging at consoleLevels.
var (
	consoleMethods = []string{"log", "info", "warn", "error", "debug"}
	consoleLevels  = []Level{LevelInfo, LevelInfo, LevelWarn, LevelError, LevelDebug}
)

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
