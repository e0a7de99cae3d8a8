package nostr

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the inputs a relay receives from the network. Plain
// `go test` runs each seed as a regular test; `go test -fuzz FuzzX` explores.
// Beyond "never panics", each target checks that anything accepted really
// satisfies the rules, so a fuzzer-found bypass fails too.

const fuzzNow = 1_800_000_000

func FuzzHTTPAuth(f *testing.F) {
	k := DeriveKeys("fuzz", RoleHuman, 0)
	at := time.Unix(fuzzNow, 0)
	body := []byte(`{"kinds":[9],"limit":5}`)
	url := "http://c1.localhost:7777/query?x=1"
	good, err := HTTPAuth(k, "POST", url, body, at)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "POST", url, body, false)
	f.Add(good, "post", "http://C1.LOCALHOST:7777/query?x=1", body, true)
	f.Add(good, "POST", url, []byte("x"), true)
	f.Add("nostr "+good[6:], "GET", url, []byte(nil), false)
	f.Add("Nostr e30=", "POST", url, body, false) // {}
	f.Add("Nostr "+base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"tags":[["u"],[]]}`)), "POST", url, body, true)
	f.Add("Nostr "+base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"created_at":-9223372036854775808,"tags":null}`)), "POST", url, body, false)
	f.Add("Nostr "+base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"created_at":1800000000,"tags":[["u","http://[::1"],["method","POST"],["payload"]]}`)), "POST", "http://[::1]:80/", body, false)
	f.Add("Nostr !!!", "POST", url, body, false)
	f.Add("Bearer x", "POST", url, body, false)
	f.Add("", "", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, header, method, u string, body []byte, requirePayload bool) {
		e, err := ParseHTTPAuth(header)
		if err != nil {
			if e != nil {
				t.Fatal("error with an event")
			}
			return
		}
		err = VerifyHTTPAuth(e, HTTPCheck{Method: method, URL: u, Body: body, RequirePayload: requirePayload, Now: time.Unix(fuzzNow, 0), MaxSkew: time.Minute})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "NIP-98: ") {
				t.Fatalf("error %q is not a NIP-98 401 message", err)
			}
			return
		}
		// Accepted: it must really be a signed, fresh kind-27235 event for u.
		if e.Kind != KindHTTPAuth || e.Verify() != nil || !SameRelayURL(e.TagValue("u"), u) {
			t.Fatalf("accepted an event that breaks the rules: %+v", e)
		}
		if d := e.CreatedAt - fuzzNow; d > 60 || d < -60 {
			t.Fatalf("accepted created_at %d", e.CreatedAt)
		}
		if requirePayload && e.Tag("payload") == nil {
			t.Fatal("accepted a missing payload tag")
		}
	})
}

func FuzzVerifyAuthEvent(f *testing.F) {
	k := DeriveKeys("fuzz", RoleAgent, 1)
	owner := DeriveKeys("fuzz", RoleAgentOwner, 1)
	at := time.Unix(fuzzNow, 0)
	oa, _ := AttestAgent(owner, k.PubKey(), "kind=22242")
	for _, c := range []struct {
		relay string
		tag   []string
	}{{"ws://127.0.0.1:7777", nil}, {"ws://localhost:7777/", oa}, {"wss://acme.buzz.example", nil}} {
		e, err := AuthEvent(k, c.relay, "c0ffee", at, c.tag)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e.AppendJSON(nil), "c0ffee", "ws://127.0.0.1:7777", true)
		f.Add(e.AppendJSON(nil), "c0ffee", c.relay, false)
	}
	f.Add([]byte(`{"kind":22242,"tags":[["relay"],["challenge"]]}`), "", "ws://x", true)
	f.Add([]byte(`{"kind":22242,"tags":[[],["relay","ws://x"],["challenge",""],["auth"]],"created_at":1800000000}`), "", "ws://x", true)
	f.Add([]byte(`{"id":"zz","pubkey":"00","sig":"","kind":22242,"created_at":9223372036854775807}`), "", "", false)
	f.Add([]byte(`null`), "", "", false)
	f.Add([]byte(`[`), "c", "ws://127.0.0.1", false)
	f.Fuzz(func(t *testing.T, raw []byte, challenge, relay string, allowOA bool) {
		e, err := ParseEvent(raw)
		if err != nil {
			return
		}
		tag, err := VerifyAuthEvent(e, AuthCheck{Challenge: challenge, RelayURL: relay, Now: time.Unix(fuzzNow, 0), MaxSkew: time.Minute, AllowOATags: allowOA})
		if err != nil {
			if !errors.Is(err, ErrAuthVerification) {
				t.Fatalf("error does not wrap ErrAuthVerification: %v", err)
			}
			return
		}
		if e.Kind != KindClientAuth || e.Verify() != nil || e.TagValue("challenge") != challenge || !SameRelayURL(e.TagValue("relay"), relay) {
			t.Fatalf("accepted an invalid AUTH event: %+v", e)
		}
		if tag != nil {
			if !allowOA {
				t.Fatal("returned an auth tag although AllowOATags is off")
			}
			// Verifying the returned tag must not panic either.
			_, _, _ = VerifyOATag(tag, e.PubKey)
		}
	})
}

func FuzzNIP44Decrypt(f *testing.F) {
	ck := [32]byte{9, 9, 9}
	good, _ := NIP44EncryptWithNonce("hello", ck, [32]byte{1})
	f.Add(good)
	f.Add("#" + good[1:])
	f.Add(good[:len(good)-4] + "AAA=")
	f.Add(strings.Repeat("A", 132))
	f.Add("")
	f.Fuzz(func(t *testing.T, payload string) {
		pt, err := NIP44Decrypt(payload, ck)
		if err == nil && (len(pt) < NIP44MinPlaintext || len(pt) > NIP44MaxPlaintext) {
			t.Fatalf("accepted a %d-byte plaintext", len(pt))
		}
	})
}

func FuzzParseOAConditions(f *testing.F) {
	for _, s := range []string{"", "kind=1&created_at<1713957000", "kind=01", "kind=1&", "created_at>4294967295", "kind=65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		conds, err := ParseOAConditions(s)
		if err != nil {
			return
		}
		// Accepted conditions render back to exactly the input: the grammar
		// is canonical, so there is one spelling per meaning.
		parts := make([]string, len(conds))
		for i, c := range conds {
			parts[i] = c.String()
		}
		if strings.Join(parts, "&") != s {
			t.Fatalf("%q parsed to %v, which renders differently", s, conds)
		}
	})
}
