package nostr

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr/wire"
)

func signedJSON(t testing.TB) string {
	k := DeriveKeys("decode", RoleHuman, 0)
	e := benchEvent()
	e.Tags = append(e.Tags, []string{"e", strings.Repeat("ab", 32), "", "reply"}, []string{})
	e.Content = "héllo \"quoted\"\n\u2028 😀"
	if err := k.Sign(e); err != nil {
		t.Fatal(err)
	}
	return string(e.AppendJSON(nil))
}

// ParseEvent decodes what encoding/json decodes into Event, and fails where
// it fails: the relay and NIP-98 parsed with encoding/json before the wire
// scanner, and their answers must not change.
func FuzzParseEventMatchesEncodingJSON(f *testing.F) {
	obj := signedJSON(f)
	for _, s := range []string{
		obj, `null`, `{}`, ` {"ID":"a","Kind":1} `, `{"kind":null,"tags":null,"content":null}`,
		`{"tags":[null,["a",null],[]]}`, `{"kind":1.5}`, `{"kind":1e2}`, `{"created_at":-0}`,
		`{"created_at":9223372036854775808}`, `{"kind":-9223372036854775808}`, `{"id":1}`,
		`{"tags":{}}`, `{"tags":[["a",1]]}`, `{"id":"a","id":"b"}`, `{"content":"\ud800"}`,
		"{\"content\":\"\xff\"}", `{"extra":{"a":[1,{"b":null}]},"sig":"s"}`, `{"a":1}x`, `{"kind":01}`,
		`{"ſig":"x","\u0069d":"y"}`, `[]`, `"s"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseEvent(b)
		var want Event
		jerr := json.Unmarshal(b, &want)
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: ParseEvent err %v, encoding/json err %v", b, err, jerr)
		}
		if err == nil && !reflect.DeepEqual(*got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, *got, want)
		}
	})
}

// ScanEvent is the strict reading of a client's inbound EVENT: every field,
// a valid shape, and the same values encoding/json gives.
func TestScanEventStrict(t *testing.T) {
	obj := signedJSON(t)
	s := wire.New([]byte(obj))
	ev, err := ScanEvent(&s, false)
	if err != nil {
		t.Fatal(err)
	}
	var want Event
	if err := json.Unmarshal([]byte(obj), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*ev, want) {
		t.Fatalf("got %#v\nwant %#v", *ev, want)
	}
	if err := ev.Verify(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{strings.Replace(obj, `"sig":`, `"xsig":`, 1), "event lacks sig"},
		{strings.Replace(obj, `"kind":9`, `"kind":null`, 1), `field "kind"`},
		{strings.Replace(obj, `"kind":9`, `"kind":70000`, 1), "out of range"},
		{strings.Replace(obj, `"id":"`, `"ID":"`, 1), "event lacks id"},
	} {
		s := wire.New([]byte(c.in))
		if _, err := ScanEvent(&s, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.in[:40], err, c.want)
		}
	}
}

// BenchmarkParseEvent compares the wire decoder with encoding/json on the
// reference event: the reason the wire scanner exists.
func BenchmarkParseEvent(b *testing.B) {
	obj := []byte(signedJSON(b))
	b.Run("wire-strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := wire.New(obj)
			if _, err := ScanEvent(&s, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire-lenient", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseEvent(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Event
			if err := json.Unmarshal(obj, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
