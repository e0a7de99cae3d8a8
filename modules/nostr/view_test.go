package nostr

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// viewSeeds are events ScanEvent accepts and ones it rejects for each of
// its rules, so the in-place scan is held to every one of them.
func viewSeeds(t testing.TB) []string {
	obj := signedJSON(t)
	id := `"` + strings.Repeat("ab", 32) + `"`
	sig := `"` + strings.Repeat("cd", 64) + `"`
	body := func(extra string) string {
		return `{"id":` + id + `,"pubkey":` + id + `,"created_at":1,"kind":9,"tags":[["h","c"]],"content":"x","sig":` + sig + extra + `}`
	}
	return []string{
		obj, body(""), body(`,"extra":{"a":[1,{"b":null}]}`), body(`,"kind":65536`), body(`,"kind":-1`),
		body(`,"id":"AB"`), body(`,"id":` + id), body(`,"tags":[["a",1]]`), body(`,"tags":[null]`),
		body(`,"tags":{}`), body(`,"content":"\ud800"`), body(",\"content\":\"\xff\""), body(`,"content":"\u00e9\n"`),
		body(`,"kind":1.5`), body(`,"created_at":9223372036854775808`), body(`,"sig":null`),
		`{"\u0069d":` + id + `,"pubkey":` + id + `,"created_at":1,"kind":9,"tags":[],"content":"","sig":` + sig + `}`,
		`{"id":"\u0061` + strings.Repeat("b", 63) + `","pubkey":` + id + `,"created_at":1,"kind":9,"tags":[[],["h"],["h","\u0063",""]],"content":"","sig":` + sig + `}`,
		`{"id":` + id + `,"pubkey":` + id + `,"created_at":1,"kind":9,"tags":[["buzzload_sent"],["buzzload_sent","12"]],"content":"","sig":` + sig + `}`,
		`{"ID":` + id + `}`, `{}`, `null`, `[]`, `{`, `{"id"`, `{"id":` + id + `,}`, obj + "x", " " + obj,
	}
}

// The in-place scan accepts exactly what ScanEvent accepts, with the same
// error, the same end position, the same fields and tag lookups, and
// Event() is ScanEvent's event.
func FuzzEventViewMatchesScanEvent(f *testing.F) {
	for _, s := range viewSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s1 := wire.New(b)
		want, werr := ScanEvent(&s1, false)
		s2 := wire.New(b)
		var v EventView
		err := ScanEventView(&s2, &v)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: view err %v, ScanEvent err %v", b, err, werr)
		}
		if err != nil {
			if err.Error() != werr.Error() {
				t.Fatalf("%q: view err %q, ScanEvent err %q", b, err, werr)
			}
			return
		}
		if s1.Pos() != s2.Pos() {
			t.Fatalf("%q: view ends at %d, ScanEvent at %d", b, s2.Pos(), s1.Pos())
		}
		if v.IDString() != want.ID || v.PubKeyString() != want.PubKey || v.CreatedAt != want.CreatedAt ||
			v.Kind != want.Kind || v.Content() != want.Content {
			t.Fatalf("%q: view %+v, ScanEvent %+v", b, v, want)
		}
		got, err := v.Event()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Event() = %+v, %v; ScanEvent %+v", b, got, err, want)
		}
		for _, tag := range append(want.Tags, []string{"absent"}) {
			if len(tag) == 0 {
				continue
			}
			for minLen := 1; minLen <= 3; minLen++ {
				wv, wok := tagValue(want, tag[0], minLen)
				gv, gok := v.TagValue(tag[0], minLen)
				if wok != gok || string(gv) != wv {
					t.Fatalf("%q: TagValue(%q, %d) = %q, %v; want %q, %v", b, tag[0], minLen, gv, gok, wv, wok)
				}
			}
		}
	})
}

// tagValue is TagValue's rule over a decoded event.
func tagValue(e *Event, name string, minLen int) (string, bool) {
	for _, t := range e.Tags {
		if len(t) > 0 && t[0] == name && len(t) >= minLen {
			if len(t) > 1 {
				return t[1], true
			}
			return "", true
		}
	}
	return "", false
}

func TestEventViewTagValueMatchesEvent(t *testing.T) {
	b := []byte(signedJSON(t))
	s := wire.New(b)
	var v EventView
	if err := ScanEventView(&s, &v); err != nil {
		t.Fatal(err)
	}
	ev, _ := v.Event()
	for _, name := range []string{"e", "h", "p", "nope"} {
		got, ok := v.TagValue(name, 1)
		if string(got) != ev.TagValue(name) || ok != (ev.Tag(name) != nil) {
			t.Fatalf("TagValue(%q) = %q, %v; Event.TagValue %q", name, got, ok, ev.TagValue(name))
		}
	}
	if !bytes.Equal(v.Raw(), b) {
		t.Fatalf("Raw = %q", v.Raw())
	}
}

// The delivery path's reads allocate nothing on an event without escapes.
func TestEventViewAllocatesNothing(t *testing.T) {
	k := DeriveKeys("view", RoleHuman, 0)
	e := &Event{CreatedAt: 1732900000, Kind: 9, Content: "load message 1-2",
		Tags: [][]string{{"h", "7f0c0000-0000-4000-8000-000000000001"}, {"buzzload_sent", "1732900000123456"}}}
	if err := k.Sign(e); err != nil {
		t.Fatal(err)
	}
	b := e.AppendJSON(nil)
	var v EventView
	n := testing.AllocsPerRun(200, func() {
		s := wire.New(b)
		if err := ScanEventView(&s, &v); err != nil {
			t.Fatal(err)
		}
		if h, ok := v.TagValue("h", 1); !ok || len(h) == 0 {
			t.Fatal("no h tag")
		}
		if _, ok := v.TagValue("buzzload_sent", 2); !ok {
			t.Fatal("no send time")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}

func BenchmarkScanEventView(b *testing.B) {
	obj := []byte(signedJSON(b))
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	var v EventView
	for b.Loop() {
		s := wire.New(obj)
		if err := ScanEventView(&s, &v); err != nil {
			b.Fatal(err)
		}
	}
}
