package relayclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// fakeRelay is a small scripted relay on 127.0.0.1 for these tests: it
// sends an AUTH challenge on connect, verifies AUTH as Buzz does, answers
// CLOSE with CLOSED "", and hands every other client frame to onFrame.
type fakeRelay struct {
	t   *testing.T
	srv *httptest.Server

	// scheme of the relay's configured RELAY_URL ("ws" or "wss"): the relay
	// tag must be scheme://<Host header>.
	scheme       string
	noChallenge  bool
	authReply    func(ev *nostr.Event, err error) (bool, string) // default: ok iff verified
	onFrame      func(fc *fakeConn, verb string, raw []json.RawMessage)
	onUpgrade    func(r *http.Request) (status int, body string) // non-zero status refuses
	defaultOKs   bool                                            // answer EVENTs with OK true when onFrame is nil
	mu           sync.Mutex
	hosts        []string
	remotes      []string
	authEvents   []*nostr.Event
	conns        []*fakeConn
	upgradeCount int
}

type fakeConn struct {
	ws    *websocket.Conn
	wmu   sync.Mutex
	host  string
	authd bool
}

func (fc *fakeConn) send(s string) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	_ = fc.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = fc.ws.WriteMessage(websocket.TextMessage, []byte(s))
}

func (fc *fakeConn) sendf(format string, a ...any) { fc.send(fmt.Sprintf(format, a...)) }

func newFakeRelay(t *testing.T, configure func(*fakeRelay)) *fakeRelay {
	t.Helper()
	fr := &fakeRelay{t: t, scheme: "ws", defaultOKs: true}
	if configure != nil {
		configure(fr)
	}
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024}
	fr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fr.mu.Lock()
		fr.hosts = append(fr.hosts, r.Host)
		fr.remotes = append(fr.remotes, r.RemoteAddr)
		fr.upgradeCount++
		fr.mu.Unlock()
		if fr.onUpgrade != nil {
			if st, body := fr.onUpgrade(r); st != 0 {
				if st == http.StatusTooManyRequests {
					w.Header().Set("Retry-After", "7")
				}
				w.WriteHeader(st)
				_, _ = w.Write([]byte(body))
				return
			}
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		fc := &fakeConn{ws: ws, host: r.Host}
		fr.mu.Lock()
		fr.conns = append(fr.conns, fc)
		fr.mu.Unlock()
		go fr.serve(fc)
	}))
	t.Cleanup(fr.close)
	return fr
}

func (fr *fakeRelay) close() {
	fr.mu.Lock()
	conns := append([]*fakeConn(nil), fr.conns...)
	fr.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
	fr.srv.Close()
}

func (fr *fakeRelay) addr() string { return strings.TrimPrefix(fr.srv.URL, "http://") }

func (fr *fakeRelay) wsURL() string { return "ws://" + fr.addr() }

func (fr *fakeRelay) conn(i int) *fakeConn {
	var c *fakeConn
	waitfor.Until(fr.t, fmt.Sprintf("server connection %d", i), 5*time.Second, func() bool {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		if i < len(fr.conns) {
			c = fr.conns[i]
		}
		return c != nil
	})
	return c
}

const testChallenge = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func (fr *fakeRelay) serve(fc *fakeConn) {
	if !fr.noChallenge {
		fc.sendf(`["AUTH",%q]`, testChallenge)
	}
	for {
		_, b, err := fc.ws.ReadMessage()
		if err != nil {
			return
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil || len(raw) == 0 {
			fc.sendf(`["NOTICE","invalid message: %s"]`, "bad json")
			continue
		}
		var verb string
		_ = json.Unmarshal(raw[0], &verb)
		switch verb {
		case "AUTH":
			ev, err := nostr.ParseEvent(raw[1])
			if err != nil {
				fr.t.Errorf("AUTH event: %v", err)
				continue
			}
			fr.mu.Lock()
			fr.authEvents = append(fr.authEvents, ev)
			fr.mu.Unlock()
			_, verr := nostr.VerifyAuthEvent(ev, nostr.AuthCheck{
				Challenge: testChallenge, RelayURL: fr.scheme + "://" + nostr.NormalizeHost(fc.host),
				Now: time.Now(), MaxSkew: time.Minute, AllowOATags: true,
			})
			ok, msg := verr == nil, ""
			if verr != nil {
				msg = "auth-required: verification failed"
			}
			if fr.authReply != nil {
				ok, msg = fr.authReply(ev, verr)
			}
			fc.authd = ok
			fc.sendf(`["OK",%q,%v,%q]`, ev.ID, ok, msg)
		case "CLOSE":
			var id string
			_ = json.Unmarshal(raw[1], &id)
			if fr.onFrame != nil {
				fr.onFrame(fc, verb, raw)
			}
			fc.sendf(`["CLOSED",%q,""]`, id)
		default:
			if fr.onFrame != nil {
				fr.onFrame(fc, verb, raw)
			} else if verb == "EVENT" && fr.defaultOKs {
				ev, _ := nostr.ParseEvent(raw[1])
				fc.sendf(`["OK",%q,true,""]`, ev.ID)
			}
		}
	}
}

func eventID(raw []json.RawMessage) string {
	ev, err := nostr.ParseEvent(raw[1])
	if err != nil {
		return ""
	}
	return ev.ID
}

func subID(raw []json.RawMessage) string {
	var id string
	_ = json.Unmarshal(raw[1], &id)
	return id
}

// testKeys are fixed test identities.
func testKeys(t testing.TB, i int) *nostr.Keys {
	t.Helper()
	return nostr.DeriveKeys("relay-test", nostr.RoleHuman, i)
}

func signed(t testing.TB, k *nostr.Keys, content string) *nostr.Event {
	t.Helper()
	ev, err := k.NewEvent(9, [][]string{{"h", "7f0c0000-0000-4000-8000-000000000001"}}, content, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// waitFor polls cond for up to 5 s (generous: a loaded 2-core machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.Until(t, what, 5*time.Second, cond)
}
