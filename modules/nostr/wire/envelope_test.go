package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Every envelope's frame is the JSON array NIP-01 names, decoded by
// encoding/json (an independent decoder), with awkward strings intact.
func TestEnvelopesAppendTheirFrames(t *testing.T) {
	odd := "a\"b\\c\n\t<&>\u2028é\x01"
	ev := []byte(`{"id":"ab","kind":9}`)
	for _, c := range []struct {
		name string
		got  []byte
		want []any
	}{
		{"EVENT client", EventEnvelope{Event: ev}.Append(nil), []any{"EVENT", map[string]any{"id": "ab", "kind": 9.0}}},
		{"EVENT relay", EventEnvelope{SubID: odd, Event: ev}.Append(nil), []any{"EVENT", odd, map[string]any{"id": "ab", "kind": 9.0}}},
		{"REQ", ReqEnvelope{SubID: "s", Filters: []byte(`{"kinds":[1]},{"limit":2}`)}.Append(nil), []any{"REQ", "s", map[string]any{"kinds": []any{1.0}}, map[string]any{"limit": 2.0}}},
		{"COUNT request", CountEnvelope{SubID: "c", Filters: []byte(`{}`)}.Append(nil), []any{"COUNT", "c", map[string]any{}}},
		{"COUNT answer", CountEnvelope{SubID: "c", Count: 42}.Append(nil), []any{"COUNT", "c", map[string]any{"count": 42.0}}},
		{"CLOSE", CloseEnvelope{SubID: odd}.Append(nil), []any{"CLOSE", odd}},
		{"AUTH challenge", AuthEnvelope{Challenge: "ch"}.Append(nil), []any{"AUTH", "ch"}},
		{"AUTH event", AuthEnvelope{Event: ev}.Append(nil), []any{"AUTH", map[string]any{"id": "ab", "kind": 9.0}}},
		{"OK", OKEnvelope{EventID: "id", OK: false, Reason: odd}.Append(nil), []any{"OK", "id", false, odd}},
		{"EOSE", EOSEEnvelope{SubID: "s"}.Append(nil), []any{"EOSE", "s"}},
		{"CLOSED", ClosedEnvelope{SubID: "s", Reason: "rate-limited: slow down"}.Append(nil), []any{"CLOSED", "s", "rate-limited: slow down"}},
		{"NOTICE", NoticeEnvelope{Message: odd}.Append(nil), []any{"NOTICE", odd}},
	} {
		var got []any
		if err := json.Unmarshal(c.got, &got); err != nil {
			t.Errorf("%s: %s is not JSON: %v", c.name, c.got, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %s decodes to %#v, want %#v", c.name, c.got, got, c.want)
		}
	}
	// Only what JSON.stringify escapes is escaped (Buzz's serde_json alike):
	// no \u003c for '<', no escaped non-ASCII.
	if got := string(NoticeEnvelope{Message: "<é>&"}.Append(nil)); got != `["NOTICE","<é>&"]` {
		t.Errorf("notice %s", got)
	}
}

// What a relay appends, a client scans back: the elements after the label.
func TestEnvelopesScanWhatTheyAppend(t *testing.T) {
	odd := "x\"y\\z\n\u00e9"
	scan := func(frame []byte, into interface{ Scan(*Scanner) error }) {
		t.Helper()
		s := New(frame)
		s.WS()
		if !s.Eat('[') {
			t.Fatalf("%s: no [", frame)
		}
		if _, _, err := s.RawString(); err != nil {
			t.Fatal(err)
		}
		if err := s.Comma(); err != nil {
			t.Fatal(err)
		}
		if err := into.Scan(&s); err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		if s.WS(); !s.Eat(']') {
			t.Fatalf("%s: not at the frame's end after the scan", frame)
		}
	}
	ok := OKEnvelope{EventID: "ab", OK: true, Reason: odd}
	var gotOK OKEnvelope
	scan(ok.Append(nil), &gotOK)
	closed := ClosedEnvelope{SubID: odd, Reason: "auth-required: not authenticated"}
	var gotClosed ClosedEnvelope
	scan(closed.Append(nil), &gotClosed)
	eose, notice, auth, count := EOSEEnvelope{SubID: odd}, NoticeEnvelope{Message: odd}, AuthEnvelope{Challenge: odd}, CountEnvelope{SubID: "c", Count: 7}
	var gotEOSE EOSEEnvelope
	var gotNotice NoticeEnvelope
	var gotAuth AuthEnvelope
	var gotCount CountEnvelope
	scan(eose.Append(nil), &gotEOSE)
	scan(notice.Append(nil), &gotNotice)
	scan(auth.Append(nil), &gotAuth)
	scan(count.Append(nil), &gotCount)
	if gotOK != ok || gotClosed != closed || gotEOSE != eose || gotNotice != notice || gotAuth.Challenge != auth.Challenge || gotCount.SubID != "c" || gotCount.Count != 7 {
		t.Errorf("scanned %+v %+v %+v %+v %+v %+v", gotOK, gotClosed, gotEOSE, gotNotice, gotAuth, gotCount)
	}
	// A missing element names the field.
	var e OKEnvelope
	s := New([]byte(`"ab",`))
	if err := e.Scan(&s); err == nil || err.Error()[:11] != "OK accepted" {
		t.Errorf("OK without accepted: %v", err)
	}
}

func TestParseVerb(t *testing.T) {
	for v := VerbEvent; v <= VerbNotice; v++ {
		if got := ParseVerb([]byte(v.String())); got != v {
			t.Errorf("ParseVerb(%s) = %v", v, got)
		}
	}
	if ParseVerb([]byte("event")) != VerbUnknown || ParseVerb(nil) != VerbUnknown || Verb(200).String() != "unknown" {
		t.Error("an unknown label is a verb")
	}
}
