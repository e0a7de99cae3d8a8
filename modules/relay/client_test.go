package relay

// A raw WebSocket/HTTP client for the conformance tests: gorilla/websocket
// and net/http only, so a bug shared with modules/relayclient cannot hide.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

const frameTimeout = 3 * time.Second

func startRelay(t testing.TB, mutate func(*Config)) *Relay {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RateLimit = false
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

type wsClient struct {
	t         testing.TB
	ws        *websocket.Conn
	frames    chan []byte // filled by a reader goroutine: gorilla forbids reading again after a read timeout
	readErr   error
	challenge string
	url       string // the relay URL as dialled (ws://host)
	keys      *nostr.Keys
}

// dialHost opens a socket to the relay with Host = host ("" = deployment)
// and reads the AUTH challenge.
func dialHost(t testing.TB, r *Relay, host string) *wsClient {
	t.Helper()
	c, resp, err := tryDial(r, host)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", host, err, status)
	}
	c.t = t
	f := c.read()
	if len(f) != 2 || str(f[0]) != "AUTH" || len(str(f[1])) != 64 {
		t.Fatalf("first frame is not an AUTH challenge: %s", frameString(f))
	}
	c.challenge = str(f[1])
	return c
}

func tryDial(r *Relay, host string) (*wsClient, *http.Response, error) {
	if host == "" {
		host = r.URLs().Host
	}
	addr := r.Addr()
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, network, addr)
		},
		HandshakeTimeout: frameTimeout,
	}
	u := "ws://" + host + "/"
	ws, resp, err := d.Dial(u, nil)
	if err != nil {
		return nil, resp, err
	}
	c := &wsClient{ws: ws, url: "ws://" + host, frames: make(chan []byte, 4096)}
	go func() {
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				c.readErr = err
				close(c.frames)
				return
			}
			c.frames <- b
		}
	}()
	return c, resp, nil
}

func dial(t testing.TB, r *Relay) *wsClient { return dialHost(t, r, "") }

// authed dials and authenticates as k.
func authed(t testing.TB, r *Relay, k *nostr.Keys) *wsClient {
	t.Helper()
	c := dial(t, r)
	c.auth(k, nil)
	return c
}

func (c *wsClient) authEvent(k *nostr.Keys, extra ...[]string) *nostr.Event {
	tags := [][]string{{"relay", c.url}, {"challenge", c.challenge}}
	tags = append(tags, extra...)
	e, err := k.NewEvent(22242, tags, "", time.Now())
	if err != nil {
		c.t.Fatal(err)
	}
	return e
}

func (c *wsClient) auth(k *nostr.Keys, oa []string) {
	c.t.Helper()
	var extra [][]string
	if oa != nil {
		extra = append(extra, oa)
	}
	e := c.authEvent(k, extra...)
	c.send("AUTH", e)
	c.expectOK(e.ID, true, "")
	c.keys = k
}

func (c *wsClient) send(parts ...any) {
	c.t.Helper()
	b, err := json.Marshal(parts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(b)
}

func (c *wsClient) sendRaw(b []byte) {
	c.t.Helper()
	c.ws.SetWriteDeadline(time.Now().Add(frameTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame or fails the test.
func (c *wsClient) read() []json.RawMessage {
	c.t.Helper()
	f, err := c.tryRead(frameTimeout)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

func (c *wsClient) tryRead(d time.Duration) ([]json.RawMessage, error) {
	var b []byte
	select {
	case m, ok := <-c.frames:
		if !ok {
			return nil, fmt.Errorf("connection closed: %v", c.readErr)
		}
		b = m
	case <-time.After(d):
		return nil, fmt.Errorf("no frame within %v", d)
	}
	var f []json.RawMessage
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("frame %q is not a JSON array: %w", b, err)
	}
	return f, nil
}

// expect reads until a frame with verb arrives (skipping others) and returns it.
func (c *wsClient) expect(verb string) []json.RawMessage {
	c.t.Helper()
	for i := 0; i < 100; i++ {
		f := c.read()
		if str(f[0]) == verb {
			return f
		}
	}
	c.t.Fatalf("no %s frame", verb)
	return nil
}

func (c *wsClient) expectOK(id string, ok bool, msg string) {
	c.t.Helper()
	f := c.expect("OK")
	if len(f) != 4 || str(f[1]) != id || string(f[2]) != fmt.Sprint(ok) || str(f[3]) != msg {
		c.t.Fatalf("want OK %s %v %q, got %s", short(id), ok, msg, frameString(f))
	}
}

// publish sends an EVENT and returns the OK's accepted flag and message.
func (c *wsClient) publish(e *nostr.Event) (bool, string) {
	c.t.Helper()
	c.send("EVENT", e)
	for i := 0; i < 100; i++ {
		f := c.read()
		if str(f[0]) == "OK" && str(f[1]) == e.ID {
			return string(f[2]) == "true", str(f[3])
		}
	}
	c.t.Fatalf("no OK for %s", short(e.ID))
	return false, ""
}

func (c *wsClient) mustPublish(e *nostr.Event) {
	c.t.Helper()
	if ok, msg := c.publish(e); !ok {
		c.t.Fatalf("publish kind %d refused: %q", e.Kind, msg)
	}
}

// req subscribes and returns the stored events replayed before EOSE (or the
// CLOSED reason).
func (c *wsClient) req(sub string, filters ...any) (events []*nostr.Event, closed string) {
	c.t.Helper()
	c.send(append([]any{"REQ", sub}, filters...)...)
	for i := 0; i < 10000; i++ {
		f := c.read()
		switch str(f[0]) {
		case "EVENT":
			if str(f[1]) == sub {
				events = append(events, parseEv(c.t, f[2]))
			}
		case "EOSE":
			if str(f[1]) == sub {
				return events, ""
			}
		case "CLOSED":
			if str(f[1]) == sub {
				return events, str(f[2])
			}
		}
	}
	c.t.Fatalf("no EOSE for %s", sub)
	return nil, ""
}

// nextEvent waits for a live EVENT on sub; nil when none comes within d.
func (c *wsClient) nextEvent(sub string, d time.Duration) *nostr.Event {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		f, err := c.tryRead(time.Until(deadline))
		if err != nil {
			return nil
		}
		if str(f[0]) == "EVENT" && str(f[1]) == sub {
			return parseEv(c.t, f[2])
		}
	}
	return nil
}

func (c *wsClient) close() { c.ws.Close() }

func parseEv(t testing.TB, raw json.RawMessage) *nostr.Event {
	e, err := nostr.ParseEvent(raw)
	if err != nil {
		t.Fatalf("bad event %s: %v", raw, err)
	}
	return e
}

func str(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}

func frameString(f []json.RawMessage) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ---- events ----

func ev(t testing.TB, k *nostr.Keys, kind int, content string, tags ...[]string) *nostr.Event {
	t.Helper()
	if tags == nil {
		tags = [][]string{}
	}
	e, err := k.NewEvent(kind, tags, content, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func evAt(t testing.TB, k *nostr.Keys, kind int, at time.Time, content string, tags ...[]string) *nostr.Event {
	t.Helper()
	if tags == nil {
		tags = [][]string{}
	}
	e, err := k.NewEvent(kind, tags, content, at)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func key(name string) *nostr.Keys {
	return nostr.DeriveKeys("localrelay-test", nostr.RoleHuman, hashIndex(name))
}

func hashIndex(s string) int {
	h := sha256.Sum256([]byte(s))
	return int(h[0])<<8 | int(h[1])
}

// createChannel publishes a 9007 and returns the channel id.
func (c *wsClient) createChannel(name, visibility string) string {
	c.t.Helper()
	id := newUUID()
	c.mustPublish(ev(c.t, c.keys, 9007, "", []string{"h", id}, []string{"name", name}, []string{"visibility", visibility}))
	return id
}

// ---- HTTP ----

// nip98 builds an Authorization header by hand (not via nostr.HTTPAuth).
func nip98(t testing.TB, k *nostr.Keys, method, u string, body []byte, withPayload bool, at time.Time) string {
	t.Helper()
	nonce := make([]byte, 8)
	rand.Read(nonce)
	tags := [][]string{{"u", u}, {"method", method}, {"nonce", hex.EncodeToString(nonce)}}
	if withPayload {
		sum := sha256.Sum256(body)
		tags = append(tags, []string{"payload", hex.EncodeToString(sum[:])})
	}
	e, err := k.NewEvent(27235, tags, "", at)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(e)
	return "Nostr " + base64.StdEncoding.EncodeToString(raw)
}

type httpResp struct {
	status int
	body   []byte
}

func (h httpResp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(h.body, v); err != nil {
		t.Fatalf("HTTP %d body %q: %v", h.status, h.body, err)
	}
}

func (h httpResp) errorText(t testing.TB) string {
	var m map[string]any
	h.json(t, &m)
	s, _ := m["error"].(string)
	return s
}

// doHTTP sends a request to the relay with Host = host ("" = deployment).
func doHTTP(t testing.TB, r *Relay, method, host, path string, body []byte, hdr map[string]string) httpResp {
	t.Helper()
	if host == "" {
		host = r.URLs().Host
	}
	req, err := http.NewRequest(method, "http://"+r.Addr()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpResp{resp.StatusCode, b}
}

// post signs a NIP-98 POST (with payload) and sends it.
func post(t testing.TB, r *Relay, k *nostr.Keys, path string, body any) httpResp {
	t.Helper()
	b := toJSON(t, body)
	host := r.URLs().Host
	auth := nip98(t, k, "POST", "http://"+host+path, b, true, time.Now())
	return doHTTP(t, r, "POST", "", path, b, map[string]string{"Authorization": auth, "Content-Type": "application/json"})
}

func toJSON(t testing.TB, v any) []byte {
	t.Helper()
	if b, ok := v.([]byte); ok {
		return b
	}
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func queryEvents(t testing.TB, r *Relay, k *nostr.Keys, filters ...any) []*nostr.Event {
	t.Helper()
	resp := post(t, r, k, "/query", filters)
	if resp.status != 200 {
		t.Fatalf("/query: HTTP %d %s", resp.status, resp.body)
	}
	var raws []json.RawMessage
	resp.json(t, &raws)
	out := make([]*nostr.Event, 0, len(raws))
	for _, raw := range raws {
		out = append(out, parseEv(t, raw))
	}
	return out
}

func kindsOf(es []*nostr.Event) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

var _ = strings.TrimSpace
