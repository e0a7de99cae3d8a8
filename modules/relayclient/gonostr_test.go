package relayclient

import (
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// go-nostr v0.38.2 as an independent oracle (test files only): it encodes
// with easyjson, which escapes <, >, &, U+2028/U+2029 and control bytes
// differently from us, so parsing its frames exercises the unescaping; the
// parsed event must still verify, proving we recovered the signed bytes.
func TestParseGoNostrFrames(t *testing.T) {
	k := nostr.DeriveKeys("gonostr-relay", nostr.RoleHuman, 1)
	for _, content := range []string{
		"plain",
		"<b>&amp;</b> \u2028\u2029 tab\t nl\n quote\" backslash\\ ctrl\x01\x1f del\x7f",
		"emoji 🐝🎉 and é",
		strings.Repeat("long ", 2000),
	} {
		g := gonostr.Event{CreatedAt: gonostr.Timestamp(time.Now().Unix()), Kind: 9, Content: content,
			Tags: gonostr.Tags{{"h", "chan"}, {"e", strings.Repeat("ab", 32), "", "root"}, {"x", "<&>"}}}
		if err := g.Sign(k.SecretHex()); err != nil {
			t.Fatal(err)
		}
		sub := "sub:1"
		b, err := gonostr.EventEnvelope{SubscriptionID: &sub, Event: g}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFrame(b)
		if err != nil {
			t.Fatalf("%.80s: %v", b, err)
		}
		if f.Verb != VerbEvent || f.SubID != sub || f.Event.ID != g.ID || f.Event.Content != content || f.Event.Tags[2][1] != "<&>" {
			t.Fatalf("%+v", f.Event)
		}
		if err := f.Event.Verify(); err != nil {
			t.Fatalf("parsed go-nostr event does not verify: %v", err)
		}
	}
	for _, tc := range []struct {
		env  interface{ MarshalJSON() ([]byte, error) }
		want Frame
	}{
		{gonostr.OKEnvelope{EventID: strings.Repeat("0a", 32), OK: false, Reason: "rate-limited: quota exceeded; retry in 3s"},
			Frame{Verb: VerbOK, EventID: strings.Repeat("0a", 32), Message: "rate-limited: quota exceeded; retry in 3s"}},
		{gonostr.ClosedEnvelope{SubscriptionID: "s<1>", Reason: "restricted: not a channel member"},
			Frame{Verb: VerbClosed, SubID: "s<1>", Message: "restricted: not a channel member"}},
		{gonostr.NoticeEnvelope("invalid message: <x>"), Frame{Verb: VerbNotice, Message: "invalid message: <x>"}},
		{gonostr.EOSEEnvelope("s&1"), Frame{Verb: VerbEOSE, SubID: "s&1"}},
	} {
		b, err := tc.env.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFrame(b)
		if err != nil || f != tc.want {
			t.Errorf("%s: %+v %v", b, f, err)
		}
	}
}

// Our outbound envelopes parse in go-nostr as what we meant.
func TestOurEnvelopesParseInGoNostr(t *testing.T) {
	ev := sampleEvent(t)
	g := gonostr.ParseMessage(appendEventEnvelope(nil, wire.VerbEvent, ev))
	ee, ok := g.(*gonostr.EventEnvelope)
	if !ok || ee.ID != ev.ID || ee.Content != ev.Content {
		t.Fatalf("EVENT: %#v", g)
	}
	if okSig, err := ee.CheckSignature(); !okSig || err != nil {
		t.Fatalf("go-nostr rejects our signature: %v", err)
	}
	req, err := appendSubEnvelope(nil, wire.VerbReq, "s1", []Filter{
		{Kinds: []int{9}, Tags: map[string][]string{"h": {"c1"}}, Limit: 50, Since: 10},
		{Authors: []string{ev.PubKey}, LimitZero: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	re, ok := gonostr.ParseMessage(req).(*gonostr.ReqEnvelope)
	if !ok || re.SubscriptionID != "s1" || len(re.Filters) != 2 {
		t.Fatalf("REQ %s: %#v", req, re)
	}
	f0, f1 := re.Filters[0], re.Filters[1]
	if f0.Kinds[0] != 9 || f0.Tags["h"][0] != "c1" || f0.Limit != 50 || f0.Since == nil || *f0.Since != 10 {
		t.Fatalf("filter 0 %+v", f0)
	}
	if f1.Authors[0] != ev.PubKey || !f1.LimitZero {
		t.Fatalf("filter 1 %+v", f1)
	}
}
