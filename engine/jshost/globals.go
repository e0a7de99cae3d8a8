package jshost

import (
	"slices"

	"github.com/grafana/sobek"
)

// globals is the prototype of a VU's global object: k6's globals (__VU,
// __ITER, __ENV, global, open, require, console, the timers), computed when
// read or built on first use. Left on the global object itself they were
// ~5 KB of every VU: sobek's global shares a template of the built-ins
// until a property is added, and each function is ~0.5 KB. A script's
// assignment (setTimeout = f) makes an own property of the global, which
// wins, as with any prototype.
type globals struct {
	v   *VU
	vu  sobek.Value
	fns [len(globalFns)]sobek.Value
}

// globalFns are the globals built on first use.
var globalFns = [...]string{"open", "require", "console", "setTimeout", "setInterval", "clearTimeout", "clearInterval",
	"TextEncoder", "TextDecoder"}

var globalNames = append([]string{"global", "__VU", "__ITER", "__ENV"}, globalFns[:]...)

func (g *globals) Get(key string) sobek.Value {
	v, rt := g.v, g.v.rt
	switch key {
	case "global": // k6's "extended" compatibility mode alias
		return rt.GlobalObject()
	case "__VU":
		if g.vu == nil {
			g.vu = rt.ToValue(v.id)
		}
		return g.vu
	case "__ITER":
		// Read each time: setting a global on every iteration was a fifth
		// of an empty iteration's cost.
		if v.state == nil || v.state.Iteration < 0 {
			return rt.ToValue(0)
		}
		return rt.ToValue(v.state.Iteration)
	case "__ENV":
		return v.envVal
	}
	i := slices.Index(globalFns[:], key)
	if i < 0 {
		return nil
	}
	if g.fns[i] == nil {
		g.fns[i] = g.build(i)
	}
	return g.fns[i]
}

func (g *globals) build(i int) sobek.Value {
	v, rt := g.v, g.v.rt
	switch globalFns[i] {
	case "open":
		return rt.ToValue(v.open)
	case "require":
		return rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
			return v.require(v.activeModule(), call.Argument(0).String())
		})
	case "console":
		return newConsole(v)
	case "setTimeout":
		return rt.ToValue(v.timers.setTimeout)
	case "setInterval":
		return rt.ToValue(v.timers.setInterval)
	case "TextEncoder": // k6 v2.2 (textcodec.go)
		return newTextEncoder(v)
	case "TextDecoder":
		return newTextDecoder(v)
	default: // clearTimeout, clearInterval
		return rt.ToValue(v.timers.clear)
	}
}

// Set is only reached by writing to the prototype itself: refused.
func (g *globals) Set(string, sobek.Value) bool { return false }

func (g *globals) Has(key string) bool { return slices.Contains(globalNames, key) }

func (g *globals) Delete(key string) bool { return !g.Has(key) }

func (g *globals) Keys() []string { return append([]string(nil), globalNames...) }
