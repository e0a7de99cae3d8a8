package jshost

import (
	"context"
	"sync"
	"testing"
	"time"

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

// Every VU after the consolidation sees the consolidated options in its
// `options` export (nested values, arrays, keys the script did not set),
// setup too, and its writes stay its own.
func TestConsolidatedOptionsInEveryVU(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export const options = { vus: 1, tags: { run: "script" }, custom: { keep: [1, 2] } };
export function setup() { return { tags: options.tags, stats: options.summaryTrendStats, vus: options.vus }; }
export default function (data) {
  const seen = [options.vus, options.tags.run, options.scenarios.s.executor, options.scenarios.s.vus,
    Array.isArray(options.summaryTrendStats), options.summaryTrendStats.join("+"), options.custom.keep[1],
    JSON.stringify(options.tags), Object.keys(options).join("+"), JSON.stringify(data)].join(",");
  options.tags.run = "mine";
  globalThis.out = seen + "," + options.tags.run;
}`})
	b := h.bundle(t, "main.js")
	if err := b.SetMergedOptions([]byte(`{"vus":2,"tags":{"run":"ci"},"scenarios":{"s":{"executor":"shared-iterations","vus":2}},"summaryTrendStats":["avg","p(95)"]}`)); err != nil {
		t.Fatal(err)
	}
	data, err := b.RunSetup(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := `2,ci,shared-iterations,2,true,avg+p(95),2,{"run":"ci"},vus+tags+custom+scenarios+summaryTrendStats,{"stats":["avg","p(95)"],"tags":{"run":"ci"},"vus":2},mine`
	for id := uint64(1); id <= 2; id++ {
		vu := h.vu(t, b, id)
		vu.Activate(&Scenario{Name: "s"}, "default", nil, nil)
		vu.SetSetupData(data)
		if res := vu.RunIteration(context.Background(), Iteration{Stage: -1}); res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := vu.rt.Get("out").String(); got != want {
			t.Fatalf("VU %d: out =\n %s\nwant\n %s", id, got, want)
		}
	}
}

// The globals on the global object's prototype behave as globals: found by
// name, with typeof and `in`, callable, and replaceable by the script.
func TestLazyGlobals(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
const txt = open("data.txt");
export default async function () {
  const seen = [typeof setTimeout, typeof clearInterval, "setInterval" in globalThis, typeof console.log, txt];
  await new Promise((resolve) => setTimeout(resolve, 1));
  const id = setInterval(() => {}, 1000);
  clearInterval(id);
  globalThis.setTimeout = function () { return "mine"; };
  seen.push(setTimeout(), typeof globalThis.nope, __VU, __ITER, global === globalThis, __ENV.FROM_ENV, "__ENV" in globalThis);
  globalThis.__ENV = { replaced: true };
  seen.push(__ENV.replaced);
  globalThis.out = seen.join(",");
}`, "data.txt": "hello"})
	vu := run1(t, h, h.bundle(t, "main.js"))
	if got, want := vu.rt.Get("out").String(), "function,function,true,function,hello,mine,undefined,1,0,true,yes,true,true"; got != want {
		t.Fatalf("out = %q, want %q", got, want)
	}
	// A new scenario's __ENV replaces the one the script assigned.
	vu.Activate(&Scenario{Name: "next"}, "default", map[string]string{"S": "2"}, nil)
	if got, err := vu.rt.RunString(`[__ENV.S, __ENV.FROM_ENV, __ENV.replaced].join()`); err != nil || got.String() != "2,yes," {
		t.Fatalf("__ENV after Activate = %v (%v)", got, err)
	}
}
