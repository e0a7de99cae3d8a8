package jshost

import (
	"strings"

	"github.com/grafana/sobek"
)

// newConsole builds the console object: log/info/warn/error/debug go to the
// run's logger at their level with source=console. Each method becomes a JS
// function when first read: most VUs never log, and five functions were
// ~2.5 KB of every idle VU.
func newConsole(v *VU) *sobek.Object {
	return v.rt.NewDynamicObject(&console{v: v})
}

// consoleLevels are the console methods, in Keys order.
var consoleLevels = [...]struct {
	name  string
	level Level
}{{"log", LevelInfo}, {"info", LevelInfo}, {"warn", LevelWarn}, {"error", LevelError}, {"debug", LevelDebug}}

// console is the console object's properties: the methods as read so far,
// and whatever the script set on it.
type console struct {
	v       *VU
	methods [len(consoleLevels)]sobek.Value
	own     map[string]sobek.Value // set or deleted (nil) by the script
	added   []string               // keys the script added, in order
}

func (c *console) method(i int) sobek.Value {
	if c.methods[i] == nil {
		v, level := c.v, consoleLevels[i].level
		c.methods[i] = v.rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
			parts := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				parts[i] = v.stringify(a)
			}
			v.b.cfg.Logger.Log(level, strings.Join(parts, " "), "source", "console")
			return sobek.Undefined()
		})
	}
	return c.methods[i]
}

func (c *console) Get(key string) sobek.Value {
	if v, ok := c.own[key]; ok {
		return v
	}
	for i := range consoleLevels {
		if consoleLevels[i].name == key {
			return c.method(i)
		}
	}
	return nil
}

func (c *console) Set(key string, val sobek.Value) bool {
	if c.own == nil {
		c.own = map[string]sobek.Value{}
	}
	if _, ok := c.own[key]; !ok && !isConsoleMethod(key) {
		c.added = append(c.added, key)
	}
	c.own[key] = val
	return true
}

func (c *console) Has(key string) bool {
	if v, ok := c.own[key]; ok {
		return v != nil
	}
	return isConsoleMethod(key)
}

func (c *console) Delete(key string) bool {
	if c.Has(key) {
		if c.own == nil {
			c.own = map[string]sobek.Value{}
		}
		c.own[key] = nil
	}
	return true
}

func (c *console) Keys() []string {
	var out []string
	for _, l := range consoleLevels {
		if c.Has(l.name) {
			out = append(out, l.name)
		}
	}
	for _, k := range c.added {
		if c.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

func isConsoleMethod(key string) bool {
	for _, l := range consoleLevels {
		if l.name == key {
			return true
		}
	}
	return false
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
