package jshost

import (
	"context"
	"sync"
	"testing"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// lookups counts a Lookup module's conversions by export name.
type lookups struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *lookups) module() jsmodule.Module {
	return jsmodule.ModuleFunc(func(vu jsmodule.VU) (jsmodule.Instance, error) {
		return jsmodule.StaticExports{Names: []string{"a", "b", "c", "K"}, Lookup: func(name string) any {
			l.mu.Lock()
			l.n[name]++
			l.mu.Unlock()
			if name == "K" {
				return "constant"
			}
			return func(sobek.FunctionCall) sobek.Value { return vu.Runtime().ToValue(name) }
		}}, nil
	})
}

// A Go module's exports become JS values only when the script reads them,
// once per VU, and its default export still behaves as a plain object
// holding them (same values as the named bindings, writable, deletable).
func TestGoModuleExportsAreBuiltOnFirstRead(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import m, { a } from "k6/x/lazy";
import * as ns from "k6/x/lazy";
import named from "k6/x/named";
const req = require("k6/x/named");
export default function () {
  const out = [];
  out.push(a(), a(), m.a === a, ns.b(), ns.b === m.b, m.K, Object.keys(m).join("+"));
  m.extra = 1;
  delete m.K;
  out.push(m.extra, m.K === undefined, "K" in m, Object.keys(m).join("+"), typeof a);
  out.push(named.x(), named.y === req.y, JSON.stringify(Object.keys(named)));
  globalThis.out = out.join(",");
}`})
	l := &lookups{n: map[string]int{}}
	cfg := h.config("main.js")
	cfg.Registry = NewRegistry()
	if err := cfg.Registry.Register("k6/x/lazy", l.module()); err != nil {
		t.Fatal(err)
	}
	named := jsmodule.ModuleFunc(func(vu jsmodule.VU) (jsmodule.Instance, error) {
		return jsmodule.StaticExports{Named: map[string]any{"x": func() string { return "x!" }, "y": 2}}, nil
	})
	if err := cfg.Registry.Register("k6/x/named", named); err != nil {
		t.Fatal(err)
	}
	b, err := NewBundle(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	if len(l.n) != 0 {
		t.Errorf("init that reads no export looked up %v", l.n)
	}
	l.mu.Unlock()
	vu := run1(t, h, b)
	want := `a,a,true,b,true,constant,K+a+b+c,1,true,false,a+b+c+extra,function,x!,true,["x","y"]`
	if got := vu.rt.Get("out").String(); got != want {
		t.Fatalf("out =\n %s\nwant\n %s", got, want)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Only the iteration reads exports: a, b and K once each, c never.
	for name, n := range map[string]int{"a": 1, "b": 1, "K": 1, "c": 0} {
		if l.n[name] != n {
			t.Errorf("%s looked up %d times in the iteration's VU, want %d (all: %v)", name, l.n[name], n, l.n)
		}
	}
}
