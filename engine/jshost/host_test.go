package jshost

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
)

func run1(t *testing.T, h *harness, b *Bundle) *VU {
	t.Helper()
	vu := h.vu(t, b, 1)
	if res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1}); res.Err != nil {
		t.Fatalf("iteration: %v", res.Err)
	}
	return vu
}

func TestOpenRules(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": `
import { fromLib } from "./sub/lib.js";
const txt = open("data.txt");
const bin = open("./data.txt", "b");
export default function () {
  globalThis.out = [txt, bin.byteLength, bin instanceof ArrayBuffer, fromLib].join("|");
  try { open("data.txt"); } catch (e) { globalThis.late = String(e); }
}`,
		"data.txt":     "hello",
		"sub/lib.js":   `export const fromLib = open("near.txt");`,
		"sub/near.txt": "near",
	})
	b := h.bundle(t, "main.js")
	vu := run1(t, h, b)
	if got := vu.rt.Get("out").String(); got != "hello|5|true|near" {
		t.Fatalf("out = %q", got)
	}
	if late := vu.rt.Get("late").String(); !strings.Contains(late, "init context") {
		t.Fatalf("open() outside init: %q", late)
	}
}

func TestOpenOnlyFilesOfFirstInit(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js":   "const d = open(`data${__VU}.txt`);\nexport default function () {}",
		"data0.txt": "zero", "data1.txt": "one",
	})
	b := h.bundle(t, "main.js")
	_, err := b.NewVU(context.Background(), 1, 1)
	if err == nil || !strings.Contains(err.Error(), "first initialization") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	for name, src := range map[string]string{
		"empty path": `open("");`,
		"directory":  `open("sub");`,
		"missing":    `open("nope.txt");`,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"main.js": src + "\nexport default function () {}", "sub/x": "x"})
			_, err := NewBundle(context.Background(), h.config("main.js"))
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestEnvVUAndIter(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
const initVU = __VU;
export default function () {
  globalThis.seen = (globalThis.seen || "") + [initVU, __VU, __ITER, __ENV.FROM_ENV, __ENV.SC || "-"].join(",") + ";";
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 3)
	vu.Activate(&Scenario{Name: "s1", Executor: "shared-iterations"}, "default", map[string]string{"SC": "x"}, nil)
	vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	vu.RunIteration(context.Background(), Iteration{InInstance: 1, InTest: 1, Stage: -1})
	if got := vu.rt.Get("seen").String(); got != "3,3,0,yes,x;3,3,1,yes,x;" {
		t.Fatalf("seen = %q", got)
	}
}

func TestSetupDataIsJSONAndDecodedOncePerVU(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export function setup() { return { n: 1, d: new Date(0), u: undefined, m: new Map([[1, 2]]) }; }
export default function (data) { data.n++; globalThis.ns = (globalThis.ns || "") + data.n; globalThis.rest = JSON.stringify([data.d, data.u, data.m]); }
export function teardown(data) { globalThis.td = data.n; }`})
	b := h.bundle(t, "main.js")
	raw, err := b.RunSetup(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["d"] != "1970-01-01T00:00:00Z" || m["u"] != nil || m["n"] != 1.0 {
		t.Fatalf("setup JSON = %s", raw)
	}
	for _, id := range []uint64{1, 2} {
		vu := h.vu(t, b, id)
		vu.SetSetupData(raw)
		vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
		vu.RunIteration(context.Background(), Iteration{InInstance: 1, InTest: 1, Stage: -1})
		if got := vu.rt.Get("ns").String(); got != "23" {
			t.Fatalf("VU %d saw n = %q, want 2 then 3", id, got)
		}
		if got := vu.rt.Get("rest").String(); got != `["1970-01-01T00:00:00Z",null,[[1,2]]]` {
			t.Fatalf("rest = %s", got)
		}
	}
	if err := b.RunTeardown(context.Background(), time.Second, raw); err != nil {
		t.Fatal(err)
	}
}

// VUs that share one SetupData (the engine gives every VU the same) each
// get plain objects of their own, as JSON.parse gives: a VU's writes stay
// its own, the objects can be frozen; text JSON.parse rejects is still its
// error.
func TestSharedSetupDataIsPlainObjectsPerVU(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export default function (data) {
	const before = JSON.stringify(data);
	data.list.push(4); data.o.k = "mine";
	Object.freeze(data.o); // a lazyjson view would throw
	if (!Object.isFrozen(data.o) || Object.getPrototypeOf(data) !== Object.prototype) throw new Error("not a plain object");
	globalThis.seen = before;
}`})
	b := h.bundle(t, "main.js")
	sd := NewSetupData([]byte(`{"list": [1, 2, 3], "o": {"k": "v", "__proto__": 1}, "f": 1.5}`))
	for _, id := range []uint64{1, 2} {
		vu := h.vu(t, b, id)
		vu.SetSetup(sd)
		if res := vu.RunIteration(context.Background(), Iteration{Stage: -1}); res.Err != nil {
			t.Fatalf("VU %d: %v", id, res.Err)
		}
		if got := vu.rt.Get("seen").String(); got != `{"list":[1,2,3],"o":{"k":"v","__proto__":1},"f":1.5}` {
			t.Fatalf("VU %d read %s: another VU's write, or not JSON.parse's object", id, got)
		}
	}
	bad := h.vu(t, b, 3)
	bad.SetSetup(NewSetupData([]byte(`{"a": 1} x`)))
	if res := bad.RunIteration(context.Background(), Iteration{Stage: -1}); res.Err == nil || !strings.Contains(res.Err.Error(), "decoding JSON data") {
		t.Fatalf("trailing garbage: err = %v, want JSON.parse's error", res.Err)
	}
}

func TestSetupDataFunctionOrNaNIsAnError(t *testing.T) {
	for _, ret := range []string{"{ f: function () {} }", "{ x: NaN }"} {
		h := newHarness(t, map[string]string{"main.js": "export function setup() { return " + ret + "; }\nexport default function () {}"})
		b := h.bundle(t, "main.js")
		_, err := b.RunSetup(context.Background(), time.Second)
		if err == nil || !strings.Contains(err.Error(), "error marshaling setup() data to JSON") {
			t.Fatalf("%s: err = %v", ret, err)
		}
	}
}

func TestLifecycleTimeoutsAndErrors(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export function setup() { for (;;) {} }
export function teardown() { throw new Error("td boom"); }
export default function () {}`})
	b := h.bundle(t, "main.js")
	_, err := b.RunSetup(context.Background(), 50*time.Millisecond)
	var to *TimeoutError
	if !errors.As(err, &to) || to.Phase != "setup" {
		t.Fatalf("setup err = %v", err)
	}
	err = b.RunTeardown(context.Background(), time.Second, nil)
	var se *ScriptError
	if !errors.As(err, &se) || se.Phase != "teardown" || !strings.Contains(err.Error(), "td boom") || !strings.Contains(err.Error(), "main.js:3:") {
		t.Fatalf("teardown err = %v", err)
	}
}

func TestAsyncSetupResolvedValueIsUsed(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export async function setup() { await new Promise((r) => setTimeout(r, 5)); return { ok: 1 }; }
export default function () {}`})
	b := h.bundle(t, "main.js")
	raw, err := b.RunSetup(context.Background(), time.Second)
	if err != nil || string(raw) != `{"ok":1}` {
		t.Fatalf("raw = %s, err = %v", raw, err)
	}
}

func TestHandleSummaryContract(t *testing.T) {
	cases := []struct {
		name, body string
		ok         bool
		want       string
		wantErr    string
	}{
		{"undefined means default summary", `return undefined;`, false, "", ""},
		{"null means default summary", `return null;`, false, "", ""},
		{"empty object prints nothing", `return {};`, true, "", ""},
		{"strings and buffers", `return { stdout: "out:" + data.setup_data.x, "r.txt": new Uint8Array([104, 105]).buffer };`, true, "stdout=out:7;r.txt=hi;", ""},
		{"other values are errors", `return { stdout: 5 };`, false, "", "must be a string or an ArrayBuffer"},
		{"throwing is an error", `throw new Error("hs");`, false, "", "hs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"main.js": "export default function () {}\nexport function handleSummary(data) { " + c.body + " }"})
			b := h.bundle(t, "main.js")
			outs, ok, err := b.RunHandleSummary(context.Background(), time.Second, []byte(`{"metrics":{}}`), []byte(`{"x":7}`))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || ok != c.ok {
				t.Fatalf("ok = %v, err = %v", ok, err)
			}
			var got strings.Builder
			for _, o := range outs {
				got.WriteString(o.Dest + "=" + string(o.Data) + ";")
			}
			if got.String() != c.want {
				t.Fatalf("outputs = %q", got.String())
			}
		})
	}
}

func TestChecksGroupsAndTags(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { check, group } from "k6";
import exec from "k6/execution";
export default function () {
  exec.vu.metrics.tags.mine = 5;
  check(1, { "is one": (v) => v === 1, "is two": (v) => v === 2 }, { extra: "e" });
  group("outer", () => { group("inner", () => { check(true, { nested: true }); }); });
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	vu.Activate(&Scenario{Name: "sc"}, "default", nil, map[string]string{"testwide": "t"})
	vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	checks := h.metrics.of("checks")
	if len(checks) != 3 {
		t.Fatalf("%d checks samples", len(checks))
	}
	want := []string{
		"check=is one,extra=e,group=,mine=5,scenario=sc,testwide=t:1",
		"check=is two,extra=e,group=,mine=5,scenario=sc,testwide=t:0",
		"check=nested,group=::outer::inner,mine=5,scenario=sc,testwide=t:1",
	}
	// Samples go through sharded buffers: compare them as a set.
	var got []string
	for _, s := range checks {
		got = append(got, tagString(s.Tags)+":"+fmtVal(s.Value))
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var groups []string
	for _, s := range h.metrics.of("group_duration") {
		g, _ := s.Tags.Get("group")
		groups = append(groups, g)
	}
	sort.Strings(groups)
	if strings.Join(groups, ",") != "::outer,::outer::inner" {
		t.Fatalf("group_duration groups = %v", groups)
	}
	its := h.metrics.of("iterations")
	if len(its) != 1 || tagString(its[0].Tags) != "group=,mine=5,scenario=sc,testwide=t" {
		t.Fatalf("iterations = %+v", its)
	}
}

func tagString(ts metrics.TagSet) string {
	var parts []string
	for _, tg := range ts.Tags() {
		parts = append(parts, tg.Key+"="+tg.Value)
	}
	return strings.Join(parts, ",")
}

func fmtVal(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func TestCustomMetrics(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { Counter, Trend, Rate, Gauge } from "k6/metrics";
const c = new Counter("my_counter");
const tr = new Trend("my_trend", true);
const r = new Rate("my_rate");
const g = new Gauge("my_gauge");
export default function () {
  c.add(2, { k: "v" });
  tr.add(1.5);
  r.add(true);
  g.add("7");
  globalThis.dropped = c.add(null);
}`})
	b := h.bundle(t, "main.js")
	vu := run1(t, h, b)
	if d := vu.rt.Get("dropped"); d.ToBoolean() {
		t.Fatal("add(null) should be dropped and return false")
	}
	reg := h.metrics.c.Registry()
	if m := reg.Get("my_trend"); m == nil || m.Type != metrics.Trend || m.Contains != metrics.Time {
		t.Fatalf("my_trend = %+v", m)
	}
	if s := h.metrics.of("my_counter"); len(s) != 1 || s[0].Value != 2 {
		t.Fatalf("my_counter = %+v", s)
	}
	if s := h.metrics.of("my_gauge"); len(s) != 1 || s[0].Value != 7 {
		t.Fatalf("my_gauge = %+v", s)
	}
	if !strings.Contains(h.log.String(), "dropped") {
		t.Fatalf("no warning for a dropped sample: %s", h.log.String())
	}
}

func TestCustomMetricRules(t *testing.T) {
	for name, src := range map[string]string{
		"name too short":     `import { Counter } from "k6/metrics"; new Counter("c");`,
		"type clash":         `import { Counter, Trend } from "k6/metrics"; new Counter("same"); new Trend("same");`,
		"add in init":        `import { Counter } from "k6/metrics"; new Counter("cc").add(1);`,
		"check in init":      `import { check } from "k6"; check(1, { a: true });`,
		"fail in init":       `import exec from "k6/execution"; exec.test.fail("x");`,
		"scenario in init":   `import exec from "k6/execution"; exec.scenario.name;`,
		"group name with ::": `import { group } from "k6"; export function setup() { group("a::b", () => {}); }`,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"main.js": src + "\nexport default function () {}"})
			b, err := NewBundle(context.Background(), h.config("main.js"))
			if err == nil && b.HasExport("setup") {
				_, err = b.RunSetup(context.Background(), time.Second)
			}
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T)", err, err)
			}
		})
	}
}

func TestExecutionModule(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import exec from "k6/execution";
export const options = { tags: { a: "b" }, vus: 3 };
export default function () {
  const s = exec.scenario, v = exec.vu;
  let frozen = true;
  try { "use strict"; s.name = "x"; frozen = s.name !== "x"; } catch (e) {}
  globalThis.out = [s.name, s.executor, s.iterationInInstance, s.iterationInTest, s.stage.index, s.stage.name,
    v.idInInstance, v.idInTest, v.iterationInInstance, v.iterationInScenario, frozen,
    exec.test.options.vus === undefined, exec.test.options.tags.a, exec.instance.iterationsCompleted].join(",");
  exec.test.fail("meh");
}`})
	b := h.bundle(t, "main.js")
	h.control.Counters.IterationsCompleted = 41
	vu := h.vu(t, b, 2)
	vu.idTest = 5
	vu.Activate(&Scenario{Name: "ramp", Executor: "ramping-vus"}, "default", nil, nil)
	vu.state.VUIDInTest = 5
	if res := vu.RunIteration(context.Background(), Iteration{InInstance: 7, InTest: 9, Stage: 1, StageName: "peak"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := vu.rt.Get("out").String(); got != "ramp,ramping-vus,7,9,1,peak,2,5,0,0,true,true,b,41" {
		t.Fatalf("out = %q", got)
	}
	if !h.control.Failed || h.control.Aborted {
		t.Fatalf("control = %+v", h.control)
	}
}

func TestAbortInIteration(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import exec from "k6/execution";
export default function () { exec.test.abort("enough"); globalThis.after = true; }`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	var ab *AbortError
	if !errors.As(res.Err, &ab) || ab.Reason != "enough" || !h.control.Aborted {
		t.Fatalf("res = %+v", res)
	}
	if a := vu.rt.Get("after"); a != nil && a.ToBoolean() {
		t.Fatal("the script kept running after test.abort()")
	}
	if n := len(h.metrics.of("iterations")); n != 1 {
		t.Fatalf("an aborting iteration still counts (errata 5); got %d", n)
	}
}

// asyncModule is a registry module whose function resolves a promise from a
// Go goroutine through the VU's event loop.
func asyncModule(vu jsmodule.VU) (jsmodule.Instance, error) {
	rt := vu.Runtime()
	return jsmodule.StaticExports{Named: map[string]any{
		"later": func(v string) *sobek.Promise {
			p, resolve, reject := rt.NewPromise()
			enqueue := vu.RegisterCallback()
			ctx := vu.Context()
			go func() {
				select {
				case <-time.After(10 * time.Millisecond):
					enqueue(func() error { return resolve("got " + v) })
				case <-ctx.Done():
					enqueue(func() error { return reject(ctx.Err()) })
				}
			}()
			return p
		},
		"slow": func() *sobek.Promise {
			p, resolve, reject := rt.NewPromise()
			enqueue := vu.RegisterCallback()
			ctx := vu.Context()
			go func() {
				select {
				case <-time.After(10 * time.Second):
					enqueue(func() error { return resolve(nil) })
				case <-ctx.Done():
					enqueue(func() error { return reject(ctx.Err()) })
				}
			}()
			return p
		},
		"iterTags": func() string {
			st := vu.State()
			g, _ := st.Tags.Get("scenario")
			vu.AddDataTransfer(10, 20)
			return g + "/" + st.Scenario + "/" + st.StageName
		},
	}}, nil
}

func TestRegisteredModuleWithGoPromises(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { later, iterTags } from "k6/x/async";
import * as ns from "k6/x/async";
export default async function () {
  const r = await later("x");
  globalThis.out = r + "|" + iterTags() + "|" + (typeof ns.later);
}`})
	cfg := h.config("main.js")
	cfg.Registry = NewRegistry()
	if err := cfg.Registry.Register("k6/x/async", jsmodule.ModuleFunc(asyncModule)); err != nil {
		t.Fatal(err)
	}
	b, err := NewBundle(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vu := h.vu(t, b, 1)
	vu.Activate(&Scenario{Name: "sc"}, "default", nil, nil)
	if res := vu.RunIteration(context.Background(), Iteration{Stage: 2, StageName: "peak"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := vu.rt.Get("out").String(); got != "got x|sc/sc/peak|function" {
		t.Fatalf("out = %q", got)
	}
	if s := h.metrics.of("data_received"); len(s) != 1 || s[0].Value != 20 {
		t.Fatalf("data_received = %+v", s)
	}
}

func TestRegistryRejectsBadPaths(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("buzz", jsmodule.ModuleFunc(asyncModule)); err == nil {
		t.Fatal("a path outside k6/ was accepted")
	}
	if err := r.Register("k6", jsmodule.ModuleFunc(asyncModule)); err == nil {
		t.Fatal("k6 registered twice")
	}
}

func TestEmbeddedHelpersImport(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { greet } from "buzzload/greet.js";
export default function () { globalThis.g = greet("a"); }`})
	b := h.bundle(t, "main.js")
	vu := run1(t, h, b)
	if got := vu.rt.Get("g").String(); got != "hi a" {
		t.Fatalf("g = %q", got)
	}
}

func TestInitCountAndConsole(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
console.log("init", __VU, { a: 1 });
console.debug("dbg");
console.warn("careful");
export function setup() {}
export default function () {}`})
	b := h.bundle(t, "main.js")
	h.vu(t, b, 1)
	h.vu(t, b, 2)
	if _, err := b.RunSetup(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if n := b.InitCount(); n != 4 {
		t.Fatalf("init ran %d times, want 1 (options) + 2 VUs + 1 setup", n)
	}
	log := h.log.String()
	for _, want := range []string{`level=info msg="init 1 {\"a\":1}" source=console`, "level=debug msg=dbg", "level=warning msg=careful"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestThrowingIterationCancelsModuleWork(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { slow } from "k6/x/async";
export default function () { slow().catch(() => {}); throw new Error("gave up"); }`})
	cfg := h.config("main.js")
	cfg.Registry = NewRegistry()
	if err := cfg.Registry.Register("k6/x/async", jsmodule.ModuleFunc(asyncModule)); err != nil {
		t.Fatal(err)
	}
	b, err := NewBundle(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vu := h.vu(t, b, 1)
	start := time.Now()
	res := vu.RunIteration(context.Background(), Iteration{Stage: -1})
	if res.Err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("res %+v after %s: the call's context must end with the call", res, time.Since(start))
	}
}

func TestSharedArray(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": `
import { SharedArray } from "k6/data";
const users = new SharedArray("users", function () { globalThis.built = (globalThis.built || 0) + 1; return JSON.parse(open("users.json")); });
export default function () {
  let ro = false;
  try { users[0] = 1; } catch (e) { ro = true; }
  globalThis.out = [users.length, users[1].name, users.map((u) => u.id).join("+"), ro, String(globalThis.built)].join(",");
}`,
		"users.json": `[{"id":1,"name":"ann"},{"id":2,"name":"bob"}]`,
	})
	b := h.bundle(t, "main.js")
	vu := run1(t, h, b)
	if got := vu.rt.Get("out").String(); got != "2,bob,1+2,true,undefined" {
		t.Fatalf("out = %q (the builder runs in the first init only)", got)
	}
}

func TestRandomSeedAndSleep(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { randomSeed, sleep } from "k6";
export default function () {
  randomSeed(42); const a = Math.random();
  randomSeed(42); const b = Math.random();
  globalThis.same = a === b;
  sleep(30);
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := vu.RunIteration(ctx, Iteration{Stage: -1})
	if res.Full || time.Since(start) > 5*time.Second {
		t.Fatalf("sleep must end with the context: %+v after %s", res, time.Since(start))
	}
	if s := vu.rt.Get("same"); s == nil || !s.ToBoolean() {
		t.Fatal("randomSeed did not make Math.random repeatable")
	}
}
