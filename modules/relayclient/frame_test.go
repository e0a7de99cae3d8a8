package relayclient

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/buzzload/buzzload/modules/nostr"
)

func sampleEvent(t testing.TB) *nostr.Event {
	k := nostr.DeriveKeys("frame-test", nostr.RoleHuman, 1)
	ev, err := k.NewEvent(9, [][]string{
		{"h", "7f0c0000-0000-4000-8000-000000000001"},
		{"e", strings.Repeat("ab", 32), "", "root"},
		{"p", k.PubKey()},
		{"buzzload", "1732900000123456789", "42"},
	}, "hello \"world\"\n\ttab \\ é 🎉 \u2028 <&>", time.Unix(1732900000, 0))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func eventFrame(sub string, ev *nostr.Event) []byte {
	b := []byte(`["EVENT",`)
	b = nostr.AppendString(b, sub)
	b = append(b, ',')
	b = ev.AppendJSON(b)
	return append(b, ']')
}

func TestParseFrameVerbs(t *testing.T) {
	ev := sampleEvent(t)
	id := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		in   string
		want Frame
	}{
		{`["OK","` + id + `",true,""]`, Frame{Verb: VerbOK, EventID: id, OK: true}},
		{`["OK","` + id + `",true,"duplicate:"]`, Frame{Verb: VerbOK, EventID: id, OK: true, Message: "duplicate:"}},
		{` [ "OK" , "` + id + `" , false , "rate-limited: quota exceeded; retry in 3s" ] `, Frame{Verb: VerbOK, EventID: id, Message: "rate-limited: quota exceeded; retry in 3s"}},
		{`["OK","` + id + `",false]`, Frame{Verb: VerbOK, EventID: id}},
		{`["EOSE","sub:1"]`, Frame{Verb: VerbEOSE, SubID: "sub:1"}},
		{`["CLOSED","s",""]`, Frame{Verb: VerbClosed, SubID: "s"}},
		{`["CLOSED","s","restricted: not a channel member"]`, Frame{Verb: VerbClosed, SubID: "s", Message: "restricted: not a channel member"}},
		{`["NOTICE","invalid message: x"]`, Frame{Verb: VerbNotice, Message: "invalid message: x"}},
		{`["AUTH","` + testChallenge + `"]`, Frame{Verb: VerbAuth, Message: testChallenge}},
		{`["COUNT","c1",{"count":123}]`, Frame{Verb: VerbCount, SubID: "c1", Count: 123}},
		{`["COUNT","c1",{"approximate":false,"count":0}]`, Frame{Verb: VerbCount, SubID: "c1"}},
		{`["\u004fK","` + id + `",true,"a\u00e9\ud83c\udf89"]`, Frame{Verb: VerbOK, EventID: id, OK: true, Message: "aé🎉"}},
		{`["NOTICE","x",{"future":[1,2.5e3,null,true]}]`, Frame{Verb: VerbNotice, Message: "x"}},
	} {
		got, err := ParseFrame([]byte(tc.in))
		checkScanFrame(t, []byte(tc.in), got, err)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	got, err := ParseFrame(eventFrame("s1", ev))
	checkScanFrame(t, eventFrame("s1", ev), got, err)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verb != VerbEvent || got.SubID != "s1" || !reflect.DeepEqual(*got.Event, *ev) {
		t.Fatalf("EVENT round trip:\n got %+v\nwant %+v", got.Event, ev)
	}
	if err := got.Event.Verify(); err != nil {
		t.Fatalf("parsed event does not verify: %v", err)
	}
}

// An EVENT parses to what encoding/json makes of it, unknown fields and
// whitespace included.
func TestParseFrameMatchesEncodingJSON(t *testing.T) {
	ev := sampleEvent(t)
	obj := string(ev.AppendJSON(nil))
	variants := []string{
		obj,
		strings.Replace(obj, `{"id"`, `{"extra":{"a":[1,{"b":null}]},"id"`, 1),
		strings.Replace(obj, `,"kind":`, ` , "kind" : `, 1),
		strings.Replace(obj, `"content":"`, `"content":"\u0041\/`, 1),
		strings.Replace(obj, `"tags":[`, `"tags":[[],`, 1),
	}
	for _, v := range variants {
		frame := `["EVENT","sub",` + v + `]`
		f, err := ParseFrame([]byte(frame))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		var want nostr.Event
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*f.Event, want) {
			t.Errorf("differs from encoding/json:\n got %+v\nwant %+v", *f.Event, want)
		}
	}
}

func TestParseFrameRejects(t *testing.T) {
	ev := sampleEvent(t)
	obj := string(ev.AppendJSON(nil))
	for _, tc := range []struct{ in, must string }{
		{``, "not a JSON array"},
		{`[`, "truncated"},
		{`["OK"`, "truncated"},
		{`["OK","id",true,"x"`, "closing the frame"},
		{`["OK","id",tru,"x"]`, "true or false"},
		{`["EOSE",5]`, "expected a string"},
		{`["PING","x"]`, "unknown verb"},
		{`[]`, "expected a string"},
		{`["EVENT","s",` + obj + `]]`, "after the frame"},
		{`["EVENT","s",` + obj[:len(obj)-40], "truncated"},
		{`["EVENT","s",` + strings.Replace(obj, `"kind":9`, `"kind":9.5`, 1) + `]`, "fraction"},
		{`["EVENT","s",` + strings.Replace(obj, `"kind":9`, `"kind":70000`, 1) + `]`, "out of range"},
		{`["EVENT","s",` + strings.Replace(obj, `"kind":9`, `"kind":09`, 1) + `]`, "leading zero"},
		{`["EVENT","s",` + strings.Replace(obj, `"created_at":`, `"created_at":99999999999999999999`, 1) + `]`, "out of range"},
		{`["EVENT","s",` + strings.Replace(obj, `,"sig":"`+ev.Sig+`"`, ``, 1) + `]`, "lacks sig"},
		{`["EVENT","s",` + strings.Replace(obj, `"tags":[`, `"tags":[1,`, 1) + `]`, "tag is not an array"},
		{`["EVENT","s",` + strings.Replace(obj, `"tags":[[`, `"tags":[[1,`, 1) + `]`, "expected a string"},
		{`["EVENT","s",` + strings.Replace(obj, `"content":"`, "\"content\":\"\x01", 1) + `]`, "control character"},
		{`["EVENT","s",` + strings.Replace(obj, `"content":"`, `"content":"\x`, 1) + `]`, "bad escape"},
		{`["EVENT","s",` + strings.Replace(obj, `"content":"`, `"content":"\u12`, 1) + `]`, "\\u escape"},
		{`["EVENT","s",` + strings.Replace(obj, ev.PubKey, "ABC", 1) + `]`, "pubkey"},
		{`["EVENT","s",[]]`, "expected an object"},
		{`["COUNT","c",{"n":1}]`, `no "count"`},
		{`["COUNT","c",{"count":-1}]`, "negative"},
		{`["NOTICE","x",` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]`, "nested too deep"},
		{`["NOTICE","x",01]`, "closing the frame"},
		{`["NOTICE","x",1.]`, "fraction"},
		{`["NOTICE","x",{"a" 1}]`, "expected :"},
	} {
		fr, err := ParseFrame([]byte(tc.in))
		checkScanFrame(t, []byte(tc.in), fr, err)
		if err == nil {
			t.Errorf("%.60s: accepted", tc.in)
			continue
		}
		if !errors.Is(err, ErrFrame) {
			t.Errorf("%.60s: %v does not wrap ErrFrame", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.must) {
			t.Errorf("%.60s: error %q lacks %q", tc.in, err, tc.must)
		}
	}
}

func TestParseEventsAndCount(t *testing.T) {
	ev := sampleEvent(t)
	body := "[" + string(ev.AppendJSON(nil)) + " , " + string(ev.AppendJSON(nil)) + "]\n"
	evs, err := ParseEvents([]byte(body))
	if err != nil || len(evs) != 2 || !reflect.DeepEqual(evs[1], *ev) {
		t.Fatalf("%v %d", err, len(evs))
	}
	if evs, err := ParseEvents([]byte(" [ ] ")); err != nil || evs == nil || len(evs) != 0 {
		t.Fatalf("empty array: %v %v", evs, err)
	}
	for _, bad := range []string{`{"events":[]}`, `[1]`, `[` + string(ev.AppendJSON(nil)), `null`, `<html>`} {
		if _, err := ParseEvents([]byte(bad)); err == nil {
			t.Errorf("%.40s accepted", bad)
		}
	}
	if n, err := ParseCount([]byte(`{"count":42}`)); err != nil || n != 42 {
		t.Fatalf("%d %v", n, err)
	}
	for _, bad := range []string{`[]`, `{"count":"1"}`, `{"count":1.5}`, `{}`, `{"count":1} x`} {
		if _, err := ParseCount([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestFilterJSON(t *testing.T) {
	f := Filter{
		IDs: []string{"a"}, Authors: []string{"b"}, Kinds: []int{9, 7},
		Tags:  map[string][]string{"p": {"x"}, "h": {"c1"}},
		Since: 10, Until: 20, Limit: 5,
		Extra: map[string]any{"top_level": true, "before_id": "z"},
	}
	b, err := FiltersJSON([]Filter{f, {LimitZero: true, Kinds: []int{20001}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"ids":["a"],"authors":["b"],"kinds":[9,7],"#h":["c1"],"#p":["x"],"since":10,"until":20,"limit":5,"before_id":"z","top_level":true},{"kinds":[20001],"limit":0}]`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	if !json.Valid(b) {
		t.Fatal("not JSON")
	}
	if _, err := FiltersJSON([]Filter{{Extra: map[string]any{"bad": func() {}}}}); err == nil {
		t.Fatal("unmarshalable extra accepted")
	}
}

func TestQuoteTrimsOnRuneBoundaries(t *testing.T) {
	s := strings.Repeat("é", 200)
	q := quote([]byte(s))
	if !strings.HasSuffix(q, "…") || strings.Contains(q, `\x`) || len(q) > 200 {
		t.Fatalf("%q", q)
	}
	if got := quote([]byte("short")); got != `"short"` {
		t.Fatalf("%q", got)
	}
}

// FuzzParseFrame: no input panics; whatever parses is valid JSON, and an
// EVENT survives a round trip through our own encoder unchanged.
func FuzzParseFrame(f *testing.F) {
	ev := sampleEvent(f)
	id := strings.Repeat("0f", 32)
	for _, s := range []string{
		string(eventFrame("s1", ev)),
		`["OK","` + id + `",true,"duplicate:"]`,
		`["OK","` + id + `",false,"rate-limited: quota exceeded; retry in 3s"]`,
		`["EOSE","s1"]`,
		`["CLOSED","s1",""]`,
		`["NOTICE","rate-limited: quota exceeded"]`,
		`["AUTH","` + testChallenge + `"]`,
		`["COUNT","c1",{"count":5}]`,
		`["EVENT","s1",{"id":`,
		`["\u0045VENT","s",{}]`,
		`[1e5,-0.0,"x"]`,
		`["NOTICE","\ud800\udc00\ud800"]`,
		`["EVENT","s\u0031",` + string(ev.AppendJSON(nil)) + `,{"extra":1}]`,
		`["EVENT","s1",` + string(ev.AppendJSON(nil)) + `] x`,
		`["EVENT","s1",{"id":"x"}]`,
		"[\"NOTICE\",\"\xff\xfe\"]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		checkScanFrame(t, b, fr, err)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("error does not wrap ErrFrame: %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		if fr.Verb == VerbUnknown {
			t.Fatal("parsed with no verb")
		}
		if fr.Verb == VerbEvent {
			if fr.Event == nil {
				t.Fatal("EVENT without event")
			}
			if !utf8.ValidString(fr.Event.Content) {
				t.Fatal("content is not UTF-8 after CheckShape")
			}
			again, err := ParseFrame(eventFrame(fr.SubID, fr.Event))
			if err != nil {
				t.Fatalf("re-encoded EVENT does not parse: %v", err)
			}
			if !reflect.DeepEqual(*again.Event, *fr.Event) || again.SubID != fr.SubID {
				t.Fatalf("round trip changed the event:\n%+v\n%+v", *fr.Event, *again.Event)
			}
		}
	})
}

// FuzzParseEvents: the /query body parser never panics, accepts only valid
// JSON, and what it returns re-encodes and re-parses unchanged.
func FuzzParseEvents(f *testing.F) {
	ev := sampleEvent(f)
	obj := string(ev.AppendJSON(nil))
	for _, s := range []string{"[]", "[" + obj + "]", "[" + obj + "," + obj + "]", "[" + obj, `[{"id":1}]`, `{"a":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := ParseEvents(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		body := []byte("[")
		for i := range evs {
			if i > 0 {
				body = append(body, ',')
			}
			body = evs[i].AppendJSON(body)
		}
		body = append(body, ']')
		again, err := ParseEvents(body)
		if err != nil || !reflect.DeepEqual(again, evs) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// checkScanFrame: the reader's in-place scan accepts exactly what
// ParseFrame accepts, with its error, and yields the same frame.
func checkScanFrame(t *testing.T, b []byte, fr Frame, err error) {
	t.Helper()
	var in inFrame
	lerr := parseFrame(b, &in.Frame, &in)
	if (lerr == nil) != (err == nil) {
		t.Fatalf("%q: in-place scan err %v, ParseFrame err %v", b, lerr, err)
	}
	var again inFrame
	if serr := scanFrame(b, &again); (serr == nil) != (err == nil) || serr != nil && serr.Error() != err.Error() {
		t.Fatalf("%q: scanFrame err %v, ParseFrame err %v", b, serr, err)
	}
	if err != nil {
		return
	}
	if fr.Verb != VerbEvent {
		if in.Frame != fr {
			t.Fatalf("%q: scanned %+v, parsed %+v", b, in.Frame, fr)
		}
		return
	}
	ev, verr := in.view.Event()
	if verr != nil || string(in.sub) != fr.SubID || !reflect.DeepEqual(ev, fr.Event) {
		t.Fatalf("%q: scanned sub %q event %+v (%v); parsed sub %q event %+v", b, in.sub, ev, verr, fr.SubID, fr.Event)
	}
}
