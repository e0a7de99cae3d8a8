package jshost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
)

func TestESModulesRelativeImportsAndTopLevelAwait(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": `
import { add } from "./lib/math.js";
import { greet } from "buzzload/greet.js";
const v = await Promise.resolve(40);
export const options = { vus: 2, tags: { a: "b" } };
export default function () { globalThis.result = add(v, 2) + ":" + greet("x"); }
`,
		"lib/math.js": `import { one } from "./one.js"; export function add(a, b) { return a + b + one - 1; }`,
		"lib/one.js":  `export const one = 1;`,
	})
	b := h.bundle(t, "main.js")
	if string(b.Options) != `{"tags":{"a":"b"},"vus":2}` {
		t.Fatalf("options = %s", b.Options)
	}
	if strings.Join(b.Exports, ",") != "default" {
		t.Fatalf("exports = %v", b.Exports)
	}
	vu := h.vu(t, b, 1)
	res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	if !res.Full || res.Err != nil {
		t.Fatalf("iteration: %+v", res)
	}
	if got := vu.rt.Get("result").String(); got != "42:hi x" {
		t.Fatalf("result = %q", got)
	}
}

func TestCommonJSFallbackAndRequire(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": `
var lib = require("./lib.js");
module.exports.options = { vus: 1 };
module.exports.default = function () { globalThis.r = lib.twice(21); };
`,
		"lib.js": `exports.twice = function (x) { return x * 2; };`,
	})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	if res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := vu.rt.Get("r").ToInteger(); got != 42 {
		t.Fatalf("r = %d", got)
	}
}

func TestScriptErrorsNamePosition(t *testing.T) {
	cases := []struct {
		name, main, file, want string
	}{
		{"syntax error in main", "export default function () {\n  let x = ;\n}", "main.js", "main.js:2:11"},
		{"syntax error in import", "import './bad.js';\nexport default function () {}", "bad.js", "bad.js:1:"},
		{"throw at top level", "\n\nthrow new Error('boom');\nexport default function () {}", "main.js", "main.js:3:"},
		{"missing import", "import './nope.js';\nexport default function () {}", "nope.js", "nope.js"},
		{"unknown k6 module", "import 'k6/nope';\nexport default function () {}", "k6/nope", "unknown module \"k6/nope\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"main.js": c.main, "bad.js": "let = = 1;"})
			_, err := NewBundle(context.Background(), h.config("main.js"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestIterationExceptionIsLoggedWithPosition(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": "export default function () {\n  throw new Error('kaput');\n}"})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	if !res.Full || res.Err == nil {
		t.Fatalf("res = %+v", res)
	}
	if !strings.Contains(h.log.String(), "kaput") || !strings.Contains(h.log.String(), "main.js:2:") {
		t.Fatalf("log = %q", h.log.String())
	}
	if n := len(h.metrics.of("iterations")); n != 1 {
		t.Fatalf("an iteration that throws still counts: got %d iterations samples", n)
	}
}

func TestTimersAndGoPromises(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export default async function () {
  const order = [];
  setTimeout(() => order.push("t20"), 20);
  const id = setTimeout(() => order.push("never"), 5);
  clearTimeout(id);
  let n = 0;
  const iv = setInterval(() => { order.push("iv"); if (++n === 3) clearInterval(iv); }, 1);
  await new Promise((res) => setTimeout(res, 40));
  order.push("after");
  globalThis.order = order.join(",");
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	if res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := vu.rt.Get("order").String(); got != "iv,iv,iv,t20,after" {
		t.Fatalf("order = %q", got)
	}
}

func TestIterationWaitsForPendingTimer(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export default function () { setTimeout(() => { globalThis.done = true; }, 30); }`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	if d := vu.rt.Get("done"); d == nil || !d.ToBoolean() {
		t.Fatal("the iteration ended before its timer fired")
	}
}

func TestInterruptedIterationEmitsNoIterationMetrics(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `export default function () { for (;;) {} }`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := vu.RunIteration(ctx, Iteration{InInstance: 0, InTest: 0, Stage: -1})
	if res.Full {
		t.Fatalf("res = %+v", res)
	}
	if n := len(h.metrics.of("iterations")); n != 0 {
		t.Fatalf("%d iterations samples for an interrupted iteration", n)
	}
	// The VU is usable again afterwards.
	if res := vu.RunIteration(ctx, Iteration{InInstance: 1, InTest: 1, Stage: -1}); res.Full {
		t.Fatalf("second run on a done context: %+v", res)
	}
}

func TestUnhandledRejectionFailsIteration(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
export default function () { Promise.reject(new Error("nobody")); }`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	res := vu.RunIteration(context.Background(), Iteration{InInstance: 0, InTest: 0, Stage: -1})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "Uncaught (in promise)") {
		t.Fatalf("err = %v", res.Err)
	}
}

func TestInitAbortIsAbortError(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import exec from "k6/execution";
exec.test.abort("no");
export default function () {}`})
	_, err := NewBundle(context.Background(), h.config("main.js"))
	var ab *AbortError
	if !errors.As(err, &ab) || ab.Reason != "no" {
		t.Fatalf("err = %#v", err)
	}
}

func TestModuleGraphShapes(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": `
import { a, fromB } from "./a.js";
export * from "./reexport.js";
import * as cjs from "./cjs.js";
import cjsDefault from "./cjs.js";
export default function () { globalThis.out = [a, fromB(), cjsDefault.v, typeof cjs.default].join(","); }`,
		"a.js":        `import { b } from "./b.js"; export const a = "a"; export function fromB() { return b(); }`,
		"b.js":        `import { a } from "./a.js"; export function b() { return "b sees " + a; }`,
		"reexport.js": `export const shared = 1; export function setup() { return { fromReexport: true }; }`,
		"cjs.js":      `module.exports = { v: "cjs" };`,
	})
	b := h.bundle(t, "main.js")
	if !b.HasExport("setup") {
		t.Fatalf("export * did not re-export setup: %v", b.Exports)
	}
	vu := run1(t, h, b)
	if got := vu.rt.Get("out").String(); got != "a,b sees a,cjs,object" {
		t.Fatalf("out = %q", got)
	}
}

func TestRemoteImportsAreRefused(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `import x from "https://jslib.k6.io/x.js";
export default function () {}`})
	_, err := NewBundle(context.Background(), h.config("main.js"))
	if err == nil || !strings.Contains(err.Error(), "https://jslib.k6.io/x.js") || !strings.Contains(err.Error(), "scheme") {
		t.Fatalf("err = %v", err)
	}
}

func TestModulesAreLockedAfterFirstInit(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js": "if (__VU === 2) require(\"./late.js\");\nexport default function () {}",
		"late.js": "exports.x = 1;",
	})
	b := h.bundle(t, "main.js")
	h.vu(t, b, 1)
	_, err := b.NewVU(context.Background(), 2, 2)
	if err == nil || !strings.Contains(err.Error(), "first initialization") {
		t.Fatalf("err = %v", err)
	}
}

func TestTopLevelAwaitThatNeverSettles(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": "await new Promise(() => {});\nexport default function () {}"})
	_, err := NewBundle(context.Background(), h.config("main.js"))
	if err == nil || !strings.Contains(err.Error(), "never settled") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoExportedFunctions(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": "export const options = {};"})
	_, err := NewBundle(context.Background(), h.config("main.js"))
	var ce *configerr.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no exported functions") {
		t.Fatalf("err = %v", err)
	}
}

func TestImportMeta(t *testing.T) {
	h := newHarness(t, map[string]string{
		"main.js":    `import { where } from "./sub/lib.js"; export const options = { main: import.meta.url.endsWith("/main.js"), lib: where, res: import.meta.resolve("./x/y.js").endsWith("/x/y.js") }; export default function () {}`,
		"sub/lib.js": `export const where = import.meta.url.endsWith("/sub/lib.js") && import.meta.resolve("../z.js").endsWith("/z.js");`,
	})
	b := h.bundle(t, "main.js")
	if string(b.Options) != `{"lib":true,"main":true,"res":true}` {
		t.Fatalf("options = %s", b.Options)
	}
}
