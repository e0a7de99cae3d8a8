package relay

// Audit tests for issue 3, "Conformance tests ... run through modules/relay
// and through a raw WebSocket/HTTP client": contracts the localrelay
// package checks with its raw client, here through this package's Conn and
// HTTP against the embedded relay, so a bug shared by both sides shows up
// as a disagreement with the raw-client tests.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/localrelay"
	"github.com/buzzload/buzzload/modules/nostr"
)

func auditRelay(t *testing.T) *localrelay.Relay {
	t.Helper()
	cfg := localrelay.DefaultConfig()
	cfg.RateLimit = false
	r, err := localrelay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func auditEvent(t *testing.T, k *nostr.Keys, kind int, content string, tags ...[]string) *nostr.Event {
	t.Helper()
	ev, err := k.NewEvent(kind, tags, content, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestAuditConformanceThroughTheClient(t *testing.T) {
	r := auditRelay(t)
	ctx := context.Background()
	u := r.URLs()
	alice, bob := nostr.DeriveKeys("audit", nostr.RoleHuman, 1), nostr.DeriveKeys("audit", nostr.RoleHuman, 2)
	sink := &CollectSink{}
	connect := func(k *nostr.Keys) *Conn {
		c, err := Connect(ctx, Config{Target: Target{WSURL: u.WS}, Keys: k, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	httpFor := func(k *nostr.Keys) *HTTP {
		h, err := NewHTTP(HTTPConfig{Target: Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: k, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := connect(alice), connect(bob)
	ha, hb := httpFor(alice), httpFor(bob)
	priv, open := "aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
	for _, ch := range [][2]string{{priv, "private"}, {open, "open"}} {
		if res := a.Publish(ctx, auditEvent(t, alice, 9007, "", []string{"h", ch[0]}, []string{"name", ch[1]}, []string{"visibility", ch[1]}), PublishOptions{}); res.Outcome != OutcomeOK {
			t.Fatalf("create %s channel: %+v", ch[1], res)
		}
	}
	root := auditEvent(t, alice, 9, "root", []string{"h", open})
	if res := a.Publish(ctx, root, PublishOptions{}); res.Outcome != OutcomeOK {
		t.Fatalf("root: %+v", res)
	}

	// §1.8/§4: OK reasons reach the client word for word, as errors.
	for _, tc := range []struct {
		name string
		ev   *nostr.Event
		want string
	}{
		{"private channel non-member", auditEvent(t, bob, 9, "x", []string{"h", priv}), "restricted: not a channel member"},
		{"reply parent missing", auditEvent(t, bob, 9, "x", []string{"h", open}, []string{"e", strings.Repeat("cd", 32), "", "reply"}), "invalid: reply parent not found"},
		{"deletion with two targets", auditEvent(t, bob, 5, "", []string{"e", root.ID}, []string{"e", strings.Repeat("cd", 32)}), "invalid: deletion events must reference exactly one target via e or a tag (got e=2, a=0)"},
		{"kind outside the allow-list", auditEvent(t, bob, 1, "note"), "restricted: unknown event kind"},
		{"relay-only kind", auditEvent(t, bob, 39006, "{}"), "restricted: relay-only kind"},
	} {
		res := b.Publish(ctx, tc.ev, PublishOptions{})
		if res.Outcome != OutcomeError || !strings.Contains(res.Error, tc.want) {
			t.Errorf("%s: outcome %v error %q, want an error quoting %q", tc.name, res.Outcome, res.Error, tc.want)
		}
	}

	// §1.6: REQ on a private channel is CLOSED for a non-member (a
	// subscribe_eose error), and allowed once added.
	if _, res, _ := b.SubscribeEOSE(ctx, []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {priv}}}}, SubOptions{EOSETimeout: 3 * time.Second}); res.Outcome != OutcomeError ||
		!strings.Contains(res.Error, "restricted: not a channel member") {
		t.Errorf("non-member REQ: %+v", res)
	}
	// §3.4/§3.5: HTTP reads of a private channel are empty for a
	// non-member, with no 39006 bounds event.
	evs, res := hb.Query(ctx, []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {priv}}, Limit: 10, Extra: map[string]any{"top_level": true}}}, CallOptions{})
	if res.Outcome != OutcomeOK || len(evs) != 0 {
		t.Errorf("non-member top_level query: %d events, %+v", len(evs), res)
	}
	if res := a.Publish(ctx, auditEvent(t, alice, 9000, "", []string{"h", priv}, []string{"p", bob.PubKey()}), PublishOptions{}); res.Outcome != OutcomeOK {
		t.Fatalf("add bob: %+v", res)
	}
	if _, res, _ := b.SubscribeEOSE(ctx, []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {priv}}}}, SubOptions{EOSETimeout: 3 * time.Second}); res.Outcome != OutcomeOK {
		t.Errorf("member REQ: %+v", res)
	}
	// The member's channel window ends with exactly one relay-signed 39006.
	evs, res = ha.Query(ctx, []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {open}}, Limit: 10, Extra: map[string]any{"top_level": true}}}, CallOptions{})
	n39006 := 0
	for _, e := range evs {
		if e.Kind == 39006 {
			n39006++
			if e.PubKey != r.RelayPubKey() {
				t.Errorf("39006 signed by %s, not the relay", e.PubKey)
			}
		}
	}
	if res.Outcome != OutcomeOK || n39006 != 1 {
		t.Errorf("top_level window: %d events, %d of kind 39006, %+v", len(evs), n39006, res)
	}
	// §3.3: WebSocket-only kinds are refused on POST /events.
	_, res = ha.PublishHTTP(ctx, auditEvent(t, alice, 20001, "online"), CallOptions{})
	if res.Outcome != OutcomeError || !strings.Contains(res.Error, "invalid: kind 20001 is only accepted via WebSocket") {
		t.Errorf("presence over HTTP: %+v", res)
	}
	if a.Stats().BadFrames+b.Stats().BadFrames != 0 {
		t.Errorf("bad frames: %+v", sink.Op(OpBadFrame))
	}
}
