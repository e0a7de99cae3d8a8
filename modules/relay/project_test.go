package relay

import (
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Issue 41 item 7: a kind 47001 is accepted only as a valid NIP-MP
// revision envelope, each malformed one refused with Buzz's text
// (project_revision.rs ProjectRevisionError), the first failure in parse's
// order. Fails without the check: every 47001 was stored.
func TestProjectRevisionEnvelope(t *testing.T) {
	owner := string(repeat('a', 64))
	ch := "11111111-1111-4111-8111-111111111111"
	good := func() [][]string {
		return [][]string{{"a", "30621:" + owner + ":buzz"}, {"base", string(repeat('c', 64))}, {"e", string(repeat('b', 64))},
			{"op", "add-related-channel"}, {"channel", ch}, {"buzz-related-channel", ch}}
	}
	with := func(f func([][]string) [][]string) [][]string { return f(good()) }
	for _, c := range []struct {
		name, content string
		tags          [][]string
		want          string
	}{
		{"canonical", "", good(), ""},
		{"content", "hello", good(), "Project revision content must be empty"},
		{"no a", "", with(func(t [][]string) [][]string { return t[1:] }), "Project revision requires exactly one a tag"},
		{"bad coordinate", "", with(func(t [][]string) [][]string { t[0][1] = "30617:" + owner + ":buzz"; return t }), "invalid Project coordinate"},
		{"uppercase owner", "", with(func(t [][]string) [][]string { t[0][1] = "30621:" + string(repeat('A', 64)) + ":buzz"; return t }), "invalid Project coordinate"},
		{"bad base", "", with(func(t [][]string) [][]string { t[1][1] = "cc"; return t }), "invalid base Project revision"},
		{"bad e", "", with(func(t [][]string) [][]string { t[2][1] = "zz"; return t }), "invalid expected Project revision"},
		{"two ops", "", with(func(t [][]string) [][]string { return append(t, []string{"op", "remove-related-channel"}) }), "Project revision requires exactly one op tag"},
		{"op with extra", "", with(func(t [][]string) [][]string { t[3] = []string{"op", "add-related-channel", "x"}; return t }), "Project revision requires exactly one op tag"},
		{"unknown op", "", with(func(t [][]string) [][]string { t[3][1] = "replace-all"; return t }), "invalid Project revision operation"},
		{"channel not canonical", "", with(func(t [][]string) [][]string { t[4][1] = "11111111111141118111111111111111"; return t }), "invalid related channel id"},
		{"duplicate snapshot", "", with(func(t [][]string) [][]string { return append(t, []string{"buzz-related-channel", ch}) }), "invalid related channel snapshot"},
	} {
		ev := &nostr.Event{Kind: nostr.KindProjectRevision, Content: c.content, Tags: c.tags}
		if got := projectRevisionError(ev); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Through a socket: refused with the text, then the canonical one stored.
	r := startRelay(t, nil)
	alice := key("alice")
	a := authed(t, r, alice)
	if ok, reason := a.publish(ev(t, alice, 47001, "not empty", good()...)); ok || reason != "invalid: Project revision content must be empty" {
		t.Errorf("a malformed 47001: %v %q", ok, reason)
	}
	a.mustPublish(ev(t, alice, 47001, "", good()...))
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
