// The relay over WebSocket against docs/buzz-protocol.md, section by section
// (the § numbers below are that document's): the connection, its hosts,
// AUTH, framing and limits. ws_events_conformance_test.go holds EVENT and
// what reads see.

package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

// §5: NIP-11 at GET / with Accept: application/nostr+json, for any host.
func TestNIP11Document(t *testing.T) {
	r := startRelay(t, nil)
	for _, host := range []string{"", "unknown.example:1"} {
		resp := doHTTP(t, r, "GET", host, "/", nil, map[string]string{"Accept": "application/nostr+json"})
		if resp.status != 200 {
			t.Fatalf("host %q: HTTP %d", host, resp.status)
		}
		var doc struct {
			Self       string         `json:"self"`
			NIPs       []int          `json:"supported_nips"`
			Limitation map[string]any `json:"limitation"`
		}
		resp.json(t, &doc)
		if doc.Self != r.RelayPubKey() {
			t.Errorf("host %q: self = %q, want relay key %q", host, doc.Self, r.RelayPubKey())
		}
		if doc.Limitation["max_message_length"] != float64(524288) || doc.Limitation["max_filters"] != float64(10) ||
			doc.Limitation["max_subscriptions"] != float64(1024) || doc.Limitation["auth_required"] != true {
			t.Errorf("host %q: limitation = %v", host, doc.Limitation)
		}
	}
}

// §1.1, §3.1: an unmapped host is refused with 404 and docs/buzz-protocol.md's bodies.
func TestUnmappedHostIsRefused(t *testing.T) {
	r := startRelay(t, nil)
	_, resp, err := tryDial(r, "nobody.example:9")
	if err == nil || resp == nil || resp.StatusCode != 404 {
		t.Fatalf("upgrade to unmapped host: err %v resp %v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "relay: no community is configured for this host" {
		t.Errorf("upgrade body %q", body)
	}
	h := doHTTP(t, r, "POST", "nobody.example:9", "/query", []byte("[]"), nil)
	if h.status != 404 || h.errorText(t) == "" {
		t.Errorf("/query on unmapped host: %d %s", h.status, h.body)
	}
}

// §3.1: hosts are normalised (case, trailing dot, default ports).
func TestHostNormalisation(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.Communities = []string{"Acme.Example:443"} })
	for _, h := range []string{"acme.example", "ACME.example.", "acme.example:443"} {
		c, resp, err := tryDial(r, h)
		if err != nil {
			t.Fatalf("%s: %v %v", h, err, resp)
		}
		c.ws.Close()
	}
}

// §1.4: answers before AUTH.
func TestBeforeAuthentication(t *testing.T) {
	r := startRelay(t, nil)
	c := dial(t, r)
	k := key("alice")
	c.send("REQ", "s1", map[string]any{"kinds": []int{1}})
	if f := c.read(); str(f[0]) != "NOTICE" || str(f[1]) != "auth-required: authenticate before subscribing" {
		t.Fatalf("REQ before AUTH: %s", frameString(f))
	}
	if f := c.read(); str(f[0]) != "CLOSED" || str(f[1]) != "s1" || str(f[2]) != "auth-required: not authenticated" {
		t.Fatalf("REQ before AUTH: %s", frameString(f))
	}
	c.send("COUNT", "c1", map[string]any{"kinds": []int{1}})
	if f := c.read(); str(f[0]) != "CLOSED" || str(f[2]) != "auth-required: not authenticated" {
		t.Fatalf("COUNT before AUTH: %s", frameString(f))
	}
	e := ev(t, k, 0, `{}`)
	c.send("EVENT", e)
	c.expectOK(e.ID, false, "auth-required: not authenticated")
}

// §1.5: NIP-42 exactly.
func TestNIP42Auth(t *testing.T) {
	r := startRelay(t, nil)
	k := key("alice")
	owner := key("owner")
	cases := []struct {
		name string
		tags func(c *wsClient) [][]string
		at   time.Duration
		ok   bool
	}{
		{"dialled URL accepted", func(c *wsClient) [][]string { return [][]string{{"relay", c.url}, {"challenge", c.challenge}} }, 0, true},
		{"trailing slash and localhost alias accepted", func(c *wsClient) [][]string {
			return [][]string{{"challenge", c.challenge}, {"relay", strings.Replace(c.url, "127.0.0.1", "localhost", 1) + "/"}}
		}, 0, true},
		{"59 s skew accepted", func(c *wsClient) [][]string { return [][]string{{"relay", c.url}, {"challenge", c.challenge}} }, 59 * time.Second, true},
		{"61 s old refused", func(c *wsClient) [][]string { return [][]string{{"relay", c.url}, {"challenge", c.challenge}} }, -61 * time.Second, false},
		{"wrong challenge refused", func(c *wsClient) [][]string {
			return [][]string{{"relay", c.url}, {"challenge", strings.Repeat("0", 64)}}
		}, 0, false},
		{"wrong relay refused", func(c *wsClient) [][]string {
			return [][]string{{"relay", "ws://other.example"}, {"challenge", c.challenge}}
		}, 0, false},
		{"duplicate relay tag refused", func(c *wsClient) [][]string {
			return [][]string{{"relay", c.url}, {"relay", c.url}, {"challenge", c.challenge}}
		}, 0, false},
		{"missing challenge refused", func(c *wsClient) [][]string { return [][]string{{"relay", c.url}} }, 0, false},
		{"valid NIP-OA tag accepted", func(c *wsClient) [][]string {
			oa, err := nostr.AttestAgent(owner, k.PubKey(), "")
			if err != nil {
				t.Fatal(err)
			}
			return [][]string{{"relay", c.url}, {"challenge", c.challenge}, oa}
		}, 0, true},
		{"NIP-OA tag with a bad signature refused", func(c *wsClient) [][]string {
			oa, _ := nostr.AttestAgent(owner, key("someone").PubKey(), "")
			return [][]string{{"relay", c.url}, {"challenge", c.challenge}, oa}
		}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, r)
			defer c.close()
			e := evAt(t, k, 22242, time.Now().Add(tc.at), "", tc.tags(c)...)
			c.send("AUTH", e)
			if tc.ok {
				c.expectOK(e.ID, true, "")
				e2 := c.authEvent(k)
				c.send("AUTH", e2)
				c.expectOK(e2.ID, false, "auth-required: already authenticated")
				return
			}
			c.expectOK(e.ID, false, "auth-required: verification failed")
			// The failure is permanent for the socket, even for a valid AUTH.
			e2 := c.authEvent(k)
			c.send("AUTH", e2)
			c.expectOK(e2.ID, false, "auth-required: authentication already failed")
		})
	}
}

// §1.1 item 5: the socket closes unless AUTH succeeds in time.
func TestAuthDeadlineClosesSocket(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.AuthTimeout = 200 * time.Millisecond })
	c := dial(t, r)
	if _, err := c.tryRead(3 * time.Second); err == nil {
		t.Fatal("socket still open after the AUTH deadline")
	}
	a := authed(t, r, key("alice"))
	// A socket opened with it that never authenticates closes at the
	// deadline: by then the authenticated one has passed it too.
	probe := dial(t, r)
	if _, err := probe.tryRead(3 * time.Second); err == nil {
		t.Fatal("probe socket still open after the AUTH deadline")
	}
	a.send("CLOSE", "x")
	if f := a.read(); str(f[0]) != "CLOSED" {
		t.Fatalf("authenticated socket closed: %s", frameString(f))
	}
}

// §1.2: bad frames get NOTICE "invalid message: …" and the socket stays;
// CLOSE is always answered with an empty CLOSED.
func TestFraming(t *testing.T) {
	r := startRelay(t, nil)
	c := authed(t, r, key("alice"))
	for _, raw := range []string{`not json`, `{"a":1}`, `["FROB"]`, `[]`, `[1,2]`} {
		c.sendRaw([]byte(raw))
		f := c.read()
		if str(f[0]) != "NOTICE" || !strings.HasPrefix(str(f[1]), "invalid message: ") {
			t.Errorf("%s: %s", raw, frameString(f))
		}
	}
	c.send("CLOSE", "never-opened")
	if f := c.read(); str(f[0]) != "CLOSED" || str(f[1]) != "never-opened" || str(f[2]) != "" {
		t.Fatalf("CLOSE: %s", frameString(f))
	}
	// Binary frames carrying JSON are accepted.
	c.ws.WriteMessage(websocket.BinaryMessage, []byte(`["CLOSE","bin"]`))
	if f := c.read(); str(f[0]) != "CLOSED" || str(f[1]) != "bin" {
		t.Fatalf("binary CLOSE: %s", frameString(f))
	}
}

// §1.3: an oversized frame gets NOTICE with sizes, then a disconnect.
func TestFrameTooLarge(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.MaxFrameBytes = 1000 })
	c := authed(t, r, key("alice"))
	big := `["CLOSE","` + strings.Repeat("x", 1200) + `"]`
	c.sendRaw([]byte(big))
	f := c.read()
	want := fmt.Sprintf("error: frame too large (%d bytes, limit 1000)", len(big))
	if str(f[0]) != "NOTICE" || str(f[1]) != want {
		t.Fatalf("got %s, want NOTICE %q", frameString(f), want)
	}
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Fatal("socket still open after an oversized frame")
	}
}

// §1.3: REQ limits.
func TestREQLimits(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.MaxSubscriptions = 2; c.MaxChannelsPerREQ = 3 })
	c := authed(t, r, key("alice"))
	many := make([]any, 11)
	for i := range many {
		many[i] = map[string]any{"kinds": []int{1}}
	}
	if _, reason := c.req("f", many...); !strings.HasPrefix(reason, "invalid: too many filters") {
		t.Errorf("11 filters: %q", reason)
	}
	hs := []string{newUUID(), newUUID(), newUUID(), newUUID()}
	if _, reason := c.req("h", map[string]any{"#h": hs}); reason != "restricted: too many explicit channels" {
		t.Errorf("4 channels over a cap of 3: %q", reason)
	}
	c.req("a", map[string]any{"kinds": []int{0}})
	c.req("b", map[string]any{"kinds": []int{0}})
	if _, reason := c.req("c", map[string]any{"kinds": []int{0}}); reason != "error: too many subscriptions" {
		t.Errorf("third subscription over a cap of 2: %q", reason)
	}
	if _, reason := c.req(strings.Repeat("s", 257), map[string]any{"kinds": []int{0}}); reason == "" {
		t.Error("257-byte subscription id accepted")
	}
}

// §1.1 item 8: beyond MaxConnections new sockets are dropped without a message.
func TestMaxConnections(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.MaxConnections = 1 })
	first := authed(t, r, key("alice"))
	c, _, err := tryDial(r, "")
	if err == nil {
		c.t = t
		if f, err := c.tryRead(2 * time.Second); err == nil {
			t.Fatalf("second socket got %s", frameString(f))
		}
	}
	first.send("CLOSE", "x")
	if f := first.read(); str(f[0]) != "CLOSED" {
		t.Fatal("first socket disturbed")
	}
}

// §1.5, §3.2: the expected relay and u URLs come from the request's Host;
// localhost:<port> is an alias of a loopback deployment community.
func TestLocalhostAlias(t *testing.T) {
	r := startRelay(t, nil)
	port := r.Addr()[strings.LastIndex(r.Addr(), ":")+1:]
	host := "localhost:" + port
	c := dialHost(t, r, host)
	alice := key("alice")
	c.auth(alice, nil) // relay tag ws://localhost:<port>
	ch := c.createChannel("x", "open")
	body := toJSON(t, []any{map[string]any{"kinds": []int{9007}, "#h": []string{ch}}})
	auth := nip98(t, alice, "POST", "http://"+host+"/query", body, true, time.Now())
	resp := doHTTP(t, r, "POST", host, "/query", body, map[string]string{"Authorization": auth})
	var evs []json.RawMessage
	resp.json(t, &evs)
	if resp.status != 200 || len(evs) != 1 {
		t.Fatalf("query through the alias: %d %s", resp.status, resp.body)
	}
}

// §1.1 item 6: the relay answers pings (its writer is the socket's only writer).
func TestPingIsAnswered(t *testing.T) {
	r := startRelay(t, nil)
	c := authed(t, r, key("alice"))
	got := make(chan string, 1)
	c.ws.SetPongHandler(func(s string) error { got <- s; return nil })
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "p1" {
			t.Fatalf("pong payload %q", s)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no pong")
	}
}

// §1.1 item 6: the relay pings every socket each PingInterval, before and
// after AUTH, and keeps doing so.
func TestRelayPingsEverySocket(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.PingInterval = 100 * time.Millisecond })
	pings := make(chan struct{}, 64)
	for range 2 {
		ws, _, err := websocket.DefaultDialer.Dial(r.URLs().WS+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		ws.SetPingHandler(func(string) error { pings <- struct{}{}; return nil })
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
	}
	deadline := time.After(5 * time.Second)
	for n := 0; n < 6; n++ { // at least three rounds for two sockets
		select {
		case <-pings:
		case <-deadline:
			t.Fatalf("%d pings in 5 s at a 100 ms interval", n)
		}
	}
}

// Relay.Stats counts what a load test compares with its own view.
func TestStatsCounters(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	bad := dial(t, r)
	e := bad.authEvent(alice)
	e.Sig = strings.Repeat("0", 128)
	bad.send("AUTH", e)
	bad.expect("OK")
	c.mustPublish(ev(t, alice, 0, `{}`))
	c.publish(ev(t, alice, 1, "x"))
	post(t, r, alice, "/count", []any{map[string]any{"kinds": []int{0}}})
	doHTTP(t, r, "POST", "", "/count", []byte("[]"), nil)
	st := r.Stats()
	if st.Connections != 2 || st.ConnectionsTotal != 2 || st.AuthOK != 1 || st.AuthFailed != 1 ||
		st.EventsAccepted != 1 || st.EventsRejected != 1 || st.HTTPRequests != 2 || st.HTTPAuthFailed != 1 {
		t.Fatalf("stats %+v", st)
	}
}
