package nostr

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAuthEventRules(t *testing.T) {
	k := DeriveKeys("t", RoleHuman, 0)
	now := time.Unix(1_800_000_000, 0)
	base := AuthCheck{Challenge: "abc", RelayURL: "ws://127.0.0.1:7777", Now: now, MaxSkew: 60 * time.Second}
	good, _ := AuthEvent(k, "ws://localhost:7777/", "abc", now, nil)
	cases := []struct {
		name string
		ev   func() *Event
		ok   bool
	}{
		{"loopback alias and trailing slash accepted", func() *Event { return good }, true},
		{"wrong challenge refused", func() *Event { e, _ := AuthEvent(k, "ws://127.0.0.1:7777", "abd", now, nil); return e }, false},
		{"other relay refused", func() *Event { e, _ := AuthEvent(k, "ws://127.0.0.1:7778", "abc", now, nil); return e }, false},
		{"61 s old refused", func() *Event {
			e, _ := AuthEvent(k, "ws://127.0.0.1:7777", "abc", now.Add(-61*time.Second), nil)
			return e
		}, false},
		{"59 s ahead accepted", func() *Event {
			e, _ := AuthEvent(k, "ws://127.0.0.1:7777", "abc", now.Add(59*time.Second), nil)
			return e
		}, true},
		{"duplicate challenge tag refused", func() *Event {
			e, _ := k.NewEvent(KindClientAuth, [][]string{{"relay", "ws://127.0.0.1:7777"}, {"challenge", "abc"}, {"challenge", "abc"}}, "", now)
			return e
		}, false},
		{"wrong kind refused", func() *Event {
			e, _ := k.NewEvent(1, [][]string{{"relay", "ws://127.0.0.1:7777"}, {"challenge", "abc"}}, "", now)
			return e
		}, false},
	}
	for _, c := range cases {
		_, err := VerifyAuthEvent(c.ev(), base)
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if err != nil && !errors.Is(err, ErrAuthVerification) {
			t.Errorf("%s: error must wrap ErrAuthVerification: %v", c.name, err)
		}
	}
}

func TestHTTPAuthRoundTrip(t *testing.T) {
	k := DeriveKeys("t", RoleAgent, 3)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`[{"kinds":[9],"#h":["c1"]}]`)
	h1, err := HTTPAuth(k, "post", "http://c1.localhost:7777/query?x=1", body, now)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HTTPAuth(k, "POST", "http://c1.localhost:7777/query?x=1", body, now)
	e1, err := ParseHTTPAuth(h1)
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := ParseHTTPAuth(h2)
	if e1.ID == e2.ID {
		t.Fatal("two requests in the same second must differ (nonce)")
	}
	check := HTTPCheck{Method: "POST", URL: "http://c1.localhost:7777/query?x=1", Body: body, RequirePayload: true, Now: now, MaxSkew: time.Minute}
	if err := VerifyHTTPAuth(e1, check); err != nil {
		t.Fatalf("valid header refused: %v", err)
	}
	for name, mut := range map[string]func(c *HTTPCheck){
		"NIP-98: payload mismatch": func(c *HTTPCheck) { c.Body = append([]byte(nil), ' ') },
		"NIP-98: url mismatch":     func(c *HTTPCheck) { c.URL = "http://c1.localhost:7777/query?x=2" },
		"NIP-98: method mismatch":  func(c *HTTPCheck) { c.Method = "GET" },
		"NIP-98: expired":          func(c *HTTPCheck) { c.Now = now.Add(2 * time.Minute) },
	} {
		c := check
		mut(&c)
		if err := VerifyHTTPAuth(e1, c); err == nil || err.Error() != name {
			t.Errorf("want %q, got %v", name, err)
		}
	}
	// A lower-case method tag from another client is accepted (Buzz compares
	// case-insensitively); a missing one is not.
	lower, _ := k.NewEvent(KindHTTPAuth, [][]string{{"u", check.URL}, {"method", "post"}}, "", now)
	if err := VerifyHTTPAuth(lower, HTTPCheck{Method: "POST", URL: check.URL, Now: now, MaxSkew: time.Minute}); err != nil {
		t.Errorf("lower-case method tag: %v", err)
	}
	noMethod, _ := k.NewEvent(KindHTTPAuth, [][]string{{"u", check.URL}}, "", now)
	if err := VerifyHTTPAuth(noMethod, HTTPCheck{URL: check.URL, Now: now, MaxSkew: time.Minute}); err == nil || err.Error() != "NIP-98: method mismatch" {
		t.Errorf("missing method tag with an empty expected method: %v", err)
	}
	if _, err := ParseHTTPAuth("Bearer x"); err != ErrMissingNostrAuth {
		t.Errorf("non-Nostr scheme: %v", err)
	}
	if _, err := ParseHTTPAuth("Nostr !!!"); err != ErrBadBase64 {
		t.Errorf("bad base64: %v", err)
	}
	if !strings.HasPrefix(h1, "Nostr ") {
		t.Error("header scheme")
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Acme.Buzz.Example.": "acme.buzz.example",
		"acme.example:443":   "acme.example",
		"acme.example:80":    "acme.example",
		"localhost:3000":     "localhost:3000",
		"C1.Localhost:7777":  "c1.localhost:7777",
	} {
		if got := NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}
