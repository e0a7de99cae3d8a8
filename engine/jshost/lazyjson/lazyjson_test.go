package lazyjson

import (
	"encoding/json"
	"testing"

	"github.com/grafana/sobek"
)

const doc = `{"vus": 2, "f": 1.5, "neg": -3, "z": -0, "big": 1e21, "s": "p(95)<200", "u": "h\u00e9\u2603 \ud83d\ude00",
 "t": true, "n": null, "tags": {"a": "b", "a": "c", "x": {"deep": [1, {"k": "v"}]}},
 "list": ["avg", "min", 3, null, [], {}],
 "many": {"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10}}`

func newRT(t *testing.T, d *Doc) *sobek.Runtime {
	t.Helper()
	rt := sobek.New()
	if err := rt.Set("o", d.Value(rt)); err != nil {
		t.Fatal(err)
	}
	if err := rt.Set("plain", mustRun(t, rt, "JSON.parse("+quote(doc)+")")); err != nil {
		t.Fatal(err)
	}
	return rt
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func mustRun(t *testing.T, rt *sobek.Runtime, src string) sobek.Value {
	t.Helper()
	v, err := rt.RunString(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

// Read, the lazy document is what JSON.parse gives.
func TestReadsLikeJSONParse(t *testing.T) {
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	rt := newRT(t, d)
	for _, expr := range []string{
		`JSON.stringify(o)`,
		`Object.keys(o).join()`,
		`Object.keys(o.many).join()`,
		`[o.vus, o.f, o.neg, 1/o.z, o.big, o.s, o.u, o.t, o.n, o.missing].map(String).join("|")`,
		`[o.tags.a, o.tags.x.deep[1].k, o.tags.x.deep.length, o.list.length, o.list[2], o.list[9]].map(String).join()`,
		`[Array.isArray(o.list), Array.isArray(o.tags), typeof o.tags, o.list instanceof Array].join()`,
		`o.list.map(x => typeof x).join() + o.list.slice(0, 2).join("+") + o.list.indexOf("min")`,
		`(() => { const out = []; for (const k in o.tags) out.push(k); return out.join(); })()`,
		`JSON.stringify({...o.tags, more: 1}) + JSON.stringify(Object.assign({}, o.many))`,
		`[("vus" in o), ("nope" in o), o.hasOwnProperty("tags"), o.tags.hasOwnProperty("toString"), String(o.tags)].join()`,
		`o.many.k10 + o.many.k9 + o.many.k0`,
	} {
		got := mustRun(t, rt, "(o => "+expr+")(o)").String()
		want := mustRun(t, rt, "(o => "+expr+")(plain)").String()
		if got != want {
			t.Errorf("%s = %q, JSON.parse gives %q", expr, got, want)
		}
	}
	if mustRun(t, rt, `o.tags === o.tags && o.list[1] === o.list[1] && o.tags.x.deep === o.tags.x.deep`).ToBoolean() != true {
		t.Error("a member read twice is not the same object")
	}
}

// Writes stay in the runtime that made them: another runtime of the same
// document still reads the original, and Export marshals the changes.
func TestWritesAreCopiedPerRuntime(t *testing.T) {
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRT(t, d), newRT(t, d)
	script := `
o.vus = 10; o.added = {q: 1}; delete o.n; o.tags.a = "changed"; delete o.tags.x; o.tags.y = [1];
o.list.push("p(99)"); o.list[0] = "max"; o.list.length = o.list.length; o.many.k11 = 11; delete o.many.k0;
plain.vus = 10; plain.added = {q: 1}; delete plain.n; plain.tags.a = "changed"; delete plain.tags.x; plain.tags.y = [1];
plain.list.push("p(99)"); plain.list[0] = "max"; plain.many.k11 = 11; delete plain.many.k0;
delete o.z; delete plain.z; // -0: JSON.stringify writes 0, Export keeps the document's -0
[JSON.stringify(o), JSON.stringify(plain)]`
	pair := mustRun(t, a, script).Export().([]any)
	if pair[0] != pair[1] {
		t.Errorf("after writes:\n %s\nJSON.parse twin:\n %s", pair[0], pair[1])
	}
	raw, err := json.Marshal(a.Get("o").Export())
	if err != nil {
		t.Fatal(err)
	}
	var x, y any
	_ = json.Unmarshal(raw, &x)
	_ = json.Unmarshal([]byte(pair[1].(string)), &y)
	if xs, ys := mustJSON(x), mustJSON(y); xs != ys {
		t.Errorf("Export marshals\n %s\nwant\n %s", xs, ys)
	}
	if got, want := mustRun(t, b, `JSON.stringify(o)`).String(), mustRun(t, b, `JSON.stringify(plain)`).String(); got != want {
		t.Errorf("the other runtime sees\n %s\nwant the original\n %s", got, want)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestTopLevelMembers(t *testing.T) {
	d, err := Parse([]byte(`{"b": {"x": 1}, "a": "s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !d.IsObject() || len(d.Keys()) != 2 || d.Keys()[0] != "b" {
		t.Fatalf("keys %v", d.Keys())
	}
	rt := sobek.New()
	if got := d.Member(rt, 0).ToObject(rt).Get("x").ToInteger(); got != 1 {
		t.Errorf("b.x = %d", got)
	}
	if _, err := Parse([]byte(`{"a": }`)); err == nil {
		t.Error("bad JSON parsed")
	}
}

// A large object keeps finding its keys after writes (its own key index).
func TestLargeObjectWrites(t *testing.T) {
	src := "{"
	for i := range 60 {
		if i > 0 {
			src += ","
		}
		src += `"k` + itoa(i) + `":` + itoa(i)
	}
	src += "}"
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rt := sobek.New()
	_ = rt.Set("o", d.Value(rt))
	got := mustRun(t, rt, `o.extra = -1; delete o.k0; delete o.k30; o.k59 = "x";
[o.k1, o.k29, o.k31, o.k59, o.extra, o.k0, o.k30, Object.keys(o).length, Object.keys(o)[58]].map(String).join()`).String()
	if want := "1,29,31,x,-1,undefined,undefined,59,extra"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Plain builds what JSON.parse builds: the same reads, and ordinary
// objects and arrays (frozen, given accessors, with their own descriptors
// and prototypes), each runtime's its own.
func TestPlainIsJSONParse(t *testing.T) {
	const odd = `{"2": "two", "b": 1, "1": "one", "__proto__": {"p": 1}, "b": [1, 2.5, -0, 1e21, "x"], "e": {}, "a": []}`
	for _, text := range []string{doc, odd, `[1, {"k": [null, true]}]`, `"s"`, `7`, `null`} {
		d, err := Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		rt := sobek.New()
		if err := rt.Set("o", d.Plain(rt)); err != nil {
			t.Fatal(err)
		}
		if err := rt.Set("ref", mustRun(t, rt, "JSON.parse("+quote(text)+")")); err != nil {
			t.Fatal(err)
		}
		for _, expr := range []string{
			`JSON.stringify(o)`,
			`typeof o + Array.isArray(o)`,
			`o === null || typeof o !== "object" ? "" : JSON.stringify(Object.getOwnPropertyNames(o))`,
			`o === null || typeof o !== "object" ? "" : JSON.stringify(Object.getOwnPropertyDescriptors(o))`,
			`o === null || typeof o !== "object" ? "" : String(Object.getPrototypeOf(o) === Object.prototype) + (Object.getPrototypeOf(o) === Array.prototype)`,
			`o === null || typeof o !== "object" ? "" : (Object.defineProperty(o, "acc", {get() { return 5 }}), String(o.acc))`,
			`o === null || typeof o !== "object" ? "" : (Object.freeze(o), String(Object.isFrozen(o)))`,
			`o && o.b ? o.b.map(x => 1/x).join() : ""`,
			`o && o.tags ? o.tags.a + Object.keys(o.many).join() : ""`,
		} {
			got := mustRun(t, rt, "(o => "+expr+")(o)").String()
			want := mustRun(t, rt, "(o => "+expr+")(ref)").String()
			if got != want {
				t.Errorf("%s: %s = %q, JSON.parse gives %q", text[:min(len(text), 20)], expr, got, want)
			}
		}
	}
	// Each call is a fresh value: a change in one runtime's copy is not in another's.
	d, _ := Parse([]byte(doc))
	rt1, rt2 := sobek.New(), sobek.New()
	_ = rt1.Set("o", d.Plain(rt1))
	_ = rt2.Set("o", d.Plain(rt2))
	mustRun(t, rt1, `o.tags.a = "changed"; o.list.push(9)`)
	if got := mustRun(t, rt2, `o.tags.a + o.list.length`).String(); got != "c6" {
		t.Errorf("another runtime's copy reads %q after a write, want c6", got)
	}
}

// setupResult is sc.setup()'s result as a VU gets it (extension.SetupResult).
const setupResult = `{"run_id":"scale-humans-19000-1","embedded":false,"ws_url":"ws://127.0.0.1:34145","communities":1,"channels":1900,"members":0,"posts":9500,"created":11400,"existing":0,"duration_ms":5957,"role":"seed"}`

// Setup data in a fresh runtime, as every VU's first iteration takes it:
// JSON.parse of the text (what each VU did) against Plain of one shared
// parse (go test -run '^$' -bench SetupData -benchmem ./engine/jshost/lazyjson/).
func BenchmarkSetupData(b *testing.B) {
	b.Run("JSON.parse", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			rt := sobek.New()
			b.StartTimer()
			parse, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
			if _, err := parse(sobek.Undefined(), rt.ToValue(setupResult)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Plain", func(b *testing.B) {
		d, err := Parse([]byte(setupResult))
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			rt := sobek.New()
			b.StartTimer()
			_ = d.Plain(rt)
		}
	})
}
