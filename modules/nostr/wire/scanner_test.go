package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

var oracleSeeds = []string{
	`[]`, `[1]`, ` [ "a" , {"b":[1,2,{"c":null}]} , true , -0.5e+3 ] `,
	`["EVENT",{"id":"x"}]`, `["REQ","s",{"kinds":[1],"#h":["c"]},{}]`,
	`[1,]`, `[,1]`, `[`, `]`, `["\u00e9\ud83d\ude00\ud800x"]`, `["a\x01"]`,
	`[01]`, `[1.]`, `[1e]`, `[-]`, `[tru]`, `[nul]`, `["\q"]`, `[{"a"}]`,
	`[{"a":1,}]`, `[] x`, `null`, `{}`, `"s"`, "[\"\xff\xfe\"]",
}

// Elements accepts exactly the arrays encoding/json decodes into
// []json.RawMessage and yields the same element bytes.
func FuzzElementsMatchesEncodingJSON(f *testing.F) {
	for _, s := range oracleSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Elements(b, nil)
		var want []json.RawMessage
		jerr := json.Unmarshal(b, &want)
		if jerr == nil && want == nil {
			return // null: the callers handle it before Elements
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: wire err %v, encoding/json err %v", b, err, jerr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d elements, encoding/json %d", b, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: element %d %q, encoding/json %q", b, i, got[i], want[i])
			}
		}
	})
}

// ParseString (with ValidUTF8) decodes what encoding/json decodes.
func FuzzParseStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\/\b\f\n\r\t\"\\"`, "\"\xff\"", `"a`, `"\u12"`, `1`, `"a" "b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseString(b)
		var want string
		jerr := json.Unmarshal(b, &want)
		if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
			return
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: wire err %v, encoding/json err %v", b, err, jerr)
		}
		if err == nil && ValidUTF8(got) != want {
			t.Fatalf("%q: wire %q, encoding/json %q", b, ValidUTF8(got), want)
		}
	})
}

func TestSkipDepthBound(t *testing.T) {
	deep := bytes.Repeat([]byte("["), MaxDepth+2)
	deep = append(deep, bytes.Repeat([]byte("]"), MaxDepth+2)...)
	s := New(deep)
	if err := s.Skip(0); err == nil {
		t.Fatal("nesting past MaxDepth accepted")
	}
}

func TestQuoteCutsOnRuneBoundary(t *testing.T) {
	b := append(bytes.Repeat([]byte("a"), 119), "é"...)
	if q := Quote(b); q != `"`+string(bytes.Repeat([]byte("a"), 119))+`"…` {
		t.Fatalf("Quote = %s", q)
	}
	if q := Quote([]byte("ok")); q != `"ok"` {
		t.Fatalf("Quote = %s", q)
	}
}

func TestElementsAllocatesNothingIntoRoom(t *testing.T) {
	b := []byte(`["REQ","sub",{"kinds":[9],"#h":["c"]}]`)
	var room [8][]byte
	n := testing.AllocsPerRun(100, func() {
		if _, err := Elements(b, room[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("Elements allocates %v times per call", n)
	}
}

// plainRun stops at exactly the first '"', '\\' or control byte, wherever
// it falls in or across its eight-byte words, and at no other byte value
// (UTF-8 bytes ≥ 0x80 included).
func TestPlainRunStopsAtEverySpecialByte(t *testing.T) {
	naive := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return i
	}
	for n := 0; n <= 20; n++ {
		for p := 0; p < n; p++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{0xc3}, n)
				b[p] = byte(c)
				for from := 0; from <= min(p+1, n); from++ {
					if got, want := plainRun(b, from), naive(b, from); got != want {
						t.Fatalf("len %d, byte %#x at %d, from %d: %d, want %d", n, c, p, from, got, want)
					}
				}
			}
		}
	}
}
