package relayclient

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient/netpoll"
)

// Both read paths: the epoll loops (default) and a goroutine per connection.
var readPaths = []struct {
	name     string
	noPoller bool
}{{"poller", false}, {"goroutine", true}}

// scriptRelay upgrades every connection with gorilla and hands it to serve
// (no AUTH challenge unless serve sends one).
func scriptRelay(t *testing.T, serve func(ws *websocket.Conn)) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		serve(ws)
	}))
	t.Cleanup(srv.Close)
	return "ws://" + strings.TrimPrefix(srv.URL, "http://")
}

type notices struct {
	mu  sync.Mutex
	got []string
}

func (n *notices) on(text string, _ time.Time) {
	n.mu.Lock()
	n.got = append(n.got, text)
	n.mu.Unlock()
}

func (n *notices) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

func dialPath(t *testing.T, url string, noPoller bool, mod func(*Config)) *Conn {
	t.Helper()
	cfg := Config{Target: Target{WSURL: url}, NoPoller: noPoller}
	if mod != nil {
		mod(&cfg)
	}
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); <-c.Done() })
	return c
}

// The relay's first frames in the same TCP segment as its 101 response
// (Buzz sends its AUTH challenge at once): none may be lost to gorilla's
// handshake reader.
func TestFramesInTheUpgradeResponsesSegmentAreNotLost(t *testing.T) {
	frame := func(s string) []byte { return append([]byte{0x81, byte(len(s))}, s...) }
	for _, split := range []string{"one write", "headers end split"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer nc.Close()
					req, err := http.ReadRequest(bufio.NewReader(nc))
					if err != nil {
						return
					}
					h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
					out := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
						base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n")
					out = append(out, frame(`["AUTH","`+testChallenge+`"]`)...)
					out = append(out, frame(`["NOTICE","first"]`)...)
					out = append(out, frame(`["NOTICE","second"]`)...)
					if split == "one write" {
						_, _ = nc.Write(out)
					} else { // the headers' \r\n\r\n across two segments, frames after
						i := strings.Index(string(out), "\r\n\r\n") + 2
						_, _ = nc.Write(out[:i])
						time.Sleep(20 * time.Millisecond) // latency in a fake: two TCP segments
						_, _ = nc.Write(out[i:])
					}
					_, _ = io.Copy(io.Discard, nc) // until the client goes
				}()
			}
		}()
		for _, p := range readPaths {
			var ns notices
			c := dialPath(t, "ws://"+ln.Addr().String(), p.noPoller, func(cfg *Config) { cfg.OnNotice = ns.on })
			waitFor(t, split+", "+p.name+": both notices", func() bool { return len(ns.list()) == 2 })
			c.mu.Lock()
			chal := c.challenge
			c.mu.Unlock()
			if chal != testChallenge || ns.list()[0] != "first" || ns.list()[1] != "second" {
				t.Fatalf("%s, %s: challenge %q, notices %q", split, p.name, chal, ns.list())
			}
		}
	}
}

// Fragmented messages (gorilla's NextWriter with a small buffer) with
// pings between fragments arrive whole; pings are answered.
func TestFragmentedMessagesAndPingPong(t *testing.T) {
	for _, p := range readPaths {
		pongs := make(chan string, 10)
		url := scriptRelay(t, func(ws *websocket.Conn) {
			ws.SetPongHandler(func(s string) error { pongs <- s; return nil })
			readerDone := make(chan struct{})
			go func() { defer close(readerDone); untilClientGoes(ws) }() // reads the pongs
			defer func() { <-readerDone }()
			w, _ := ws.NextWriter(websocket.TextMessage)
			_, _ = w.Write([]byte(`["NOTICE","`))
			_ = ws.WriteControl(websocket.PingMessage, []byte("between"), time.Now().Add(time.Second))
			_, _ = w.Write([]byte(strings.Repeat("f", 9000)))
			_, _ = w.Write([]byte(`"]`))
			_ = w.Close()
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`["NOTICE","after"]`))
		})
		var ns notices
		c := dialPath(t, url, p.noPoller, func(cfg *Config) { cfg.OnNotice = ns.on })
		waitFor(t, p.name+": notices", func() bool { return len(ns.list()) == 2 })
		if got := ns.list(); got[0] != strings.Repeat("f", 9000) || got[1] != "after" {
			t.Fatalf("%s: %d-byte notice, then %q", p.name, len(got[0]), got[1])
		}
		select {
		case s := <-pongs:
			if s != "between" {
				t.Fatalf("%s: pong %q", p.name, s)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no pong", p.name)
		}
		if st := c.Stats(); st.FramesIn != 2 || st.BadFrames != 0 {
			t.Fatalf("%s: %+v", p.name, st)
		}
	}
}

// An oversize message (whole, or fragmented) is one bad_frame; the
// connection goes on.
func TestOversizeMessagesAreBadFramesAndTheConnectionGoesOn(t *testing.T) {
	for _, p := range readPaths {
		url := scriptRelay(t, func(ws *websocket.Conn) {
			big := `["NOTICE","` + strings.Repeat("b", 300_000) + `"]`
			_ = ws.WriteMessage(websocket.TextMessage, []byte(big))
			w, _ := ws.NextWriter(websocket.TextMessage)
			for i := 0; i < 10; i++ {
				_, _ = w.Write([]byte(big[i*1000 : (i+1)*1000]))
			}
			_ = w.Close()
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`["NOTICE","small"]`))
			untilClientGoes(ws)
		})
		var ns notices
		sink := &CollectSink{}
		c := dialPath(t, url, p.noPoller, func(cfg *Config) { cfg.OnNotice, cfg.Sink, cfg.MaxFrameBytes = ns.on, sink, 4096 })
		waitFor(t, p.name+": the small notice", func() bool { return len(ns.list()) == 1 })
		bad := sink.Op(OpBadFrame)
		if len(bad) != 2 || c.Stats().BadFrames != 2 || ns.list()[0] != "small" {
			t.Fatalf("%s: %d bad frames %+v, notices %q", p.name, len(bad), bad, ns.list())
		}
		for i, n := range []int64{300_013, 10_000} {
			if !strings.Contains(bad[i].Error, fmt.Sprintf("frame too large (%d bytes, limit 4096)", n)) ||
				!strings.Contains(bad[i].Error, `"[\"NOTICE\",\"bbbb`) || bad[i].BytesReceived != n {
				t.Fatalf("%s: bad frame %d: %+v", p.name, i, bad[i])
			}
		}
	}
}

// The relay's close frame ends the connection with its code and reason, the
// same text on both paths; the client echoes the close. A relay that just
// drops the socket reads the same on both paths too.
func TestRelayCloseAndDrop(t *testing.T) {
	errs := map[string][]string{}
	for _, p := range readPaths {
		echoed := make(chan int, 1)
		url := scriptRelay(t, func(ws *websocket.Conn) {
			_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "going: bye"), time.Now().Add(time.Second))
			_, _, err := ws.ReadMessage()
			if ce, ok := err.(*websocket.CloseError); ok {
				echoed <- ce.Code
			}
		})
		c := dialPath(t, url, p.noPoller, nil)
		<-c.Done()
		if want := `closed by relay: code 4001 "going: bye"`; c.Err() == nil || c.Err().Error() != want {
			t.Fatalf("%s: Err = %v, want %s", p.name, c.Err(), want)
		}
		select {
		case code := <-echoed:
			if code != 4001 {
				t.Fatalf("%s: echoed close code %d", p.name, code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the close was not echoed", p.name)
		}
		drop := dialPath(t, scriptRelay(t, func(ws *websocket.Conn) {}), p.noPoller, nil)
		<-drop.Done()
		errs["drop"] = append(errs["drop"], drop.Err().Error())
	}
	if d := errs["drop"]; d[0] != d[1] || d[0] != `closed by relay: code 1006 "unexpected EOF"` {
		t.Fatalf("a dropped socket reads %q", d)
	}
}

// A server frame that breaks RFC 6455 ends the connection (poller path)
// with an error naming the fault.
func TestProtocolErrorEndsTheConnection(t *testing.T) {
	skipWithoutPoller(t)
	for _, tc := range []struct {
		raw  []byte
		want string
	}{
		{[]byte{0x81, 0x82, 1, 2, 3, 4, 'h', 'i'}, "masked text frame"},
		{[]byte{0xC1, 1, 'x'}, "reserved bits"},
		{[]byte{0x83, 0}, "bad opcode 3"},
	} {
		url := scriptRelay(t, func(ws *websocket.Conn) {
			_, _ = ws.NetConn().Write(tc.raw)
			untilClientGoes(ws)
		})
		c := dialPath(t, url, false, nil)
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: connection not ended", tc.want)
		}
		if c.Err() == nil || !strings.Contains(c.Err().Error(), "websocket protocol error: "+tc.want) {
			t.Fatalf("Err = %v, want one naming %q", c.Err(), tc.want)
		}
	}
}

// Close from inside a callback running on the loop: no deadlock, Done
// closes, nothing is delivered after.
func TestCloseFromACallback(t *testing.T) {
	for _, p := range readPaths {
		served := make(chan struct{})
		url := scriptRelay(t, func(ws *websocket.Conn) {
			defer close(served)
			for i := 0; i < 100_000; i++ {
				if ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`["NOTICE","n%d"]`, i))) != nil {
					return
				}
				if i%50 == 0 {
					time.Sleep(time.Millisecond) // the fake relay's pace: frames keep flowing while the client closes
				}
			}
		})
		var cp atomic.Pointer[Conn]
		var closed atomic.Bool
		var after atomic.Int32
		c := dialPath(t, url, p.noPoller, func(cfg *Config) {
			cfg.OnNotice = func(string, time.Time) {
				if closed.Load() {
					after.Add(1)
				} else if c := cp.Load(); c != nil {
					closed.Store(true)
					c.Close()
				}
			}
		})
		cp.Store(c)
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Done not closed after Close from a callback", p.name)
		}
		n := after.Load()
		<-served // the relay wrote until the socket went: nothing more can come
		if after.Load() != n || c.Err() != nil || !closed.Load() {
			t.Fatalf("%s: notices after Done: %d → %d; Err %v", p.name, n, after.Load(), c.Err())
		}
	}
}

// Many connections, frames flowing, closed at once from many goroutines
// (ours) or by the relay: each settles once (run with -race).
func TestManyConnectionsClosedConcurrentlyWhileFramesFlow(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb != "REQ" {
				return
			}
			id := subID(raw)
			fc.sendf(`["EOSE",%q]`, id)
			go func() {
				ev := string(signed(t, testKeys(t, 2), "flow").AppendJSON(nil))
				for i := 0; i < 2000; i++ {
					fc.sendf(`["EVENT",%q,%s]`, id, ev)
				}
			}()
		}
	})
	const n = 40
	var conns []*Conn
	var delivered atomic.Int64
	var disconnects atomic.Int32
	for i := 0; i < n; i++ {
		c := connect(t, fr, nil, func(cfg *Config) { cfg.OnDisconnect = func(error) { disconnects.Add(1) } })
		if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{
			OnEventView: func(v *nostr.EventView, _ time.Time, _ bool) { delivered.Add(1) },
		}); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	waitFor(t, "events flowing", func() bool { return delivered.Load() > n })
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%4 == 3 {
				_ = fr.conn(i).ws.Close() // the relay drops it
			} else {
				c.Close()
				c.Close()
			}
			<-c.Done()
		}()
	}
	wg.Wait()
	if d := disconnects.Load(); d != n {
		t.Fatalf("%d OnDisconnect calls for %d connections", d, n)
	}
	for i, c := range conns {
		if (c.Err() != nil) != (i%4 == 3) {
			t.Fatalf("conn %d: Err %v", i, c.Err())
		}
	}
}

// A connection closed, then a new one that gets the same descriptor
// number: the relay's frames for the new one reach only the new one.
func TestAReusedDescriptorReachesOnlyTheNewConnection(t *testing.T) {
	skipWithoutPoller(t)
	var mu sync.Mutex
	servers := map[string]*websocket.Conn{} // by the client's address
	url := scriptRelay(t, func(ws *websocket.Conn) {
		mu.Lock()
		servers[ws.RemoteAddr().String()] = ws
		mu.Unlock()
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	})
	fdOf := func(c *Conn) int { return c.ws.NetConn().(*handshakeConn).Conn.(*netpoll.Socket).Fd() }
	reused := 0
	closedFDs := map[int]bool{} // numbers of connections already closed
	for round := 0; round < 10; round++ {
		var old, cur notices
		a := dialPath(t, url, false, func(cfg *Config) { cfg.OnNotice = old.on })
		closedFDs[fdOf(a)] = true
		a.Close()
		<-a.Done()
		b := dialPath(t, url, false, func(cfg *Config) { cfg.OnNotice = cur.on })
		if fdB := fdOf(b); closedFDs[fdB] {
			reused++
		} else {
			closedFDs[fdB] = true // closed at the end of the round
		}
		waitFor(t, "the server side", func() bool { mu.Lock(); defer mu.Unlock(); return len(servers) == 2*(round+1) })
		mu.Lock()
		srvA, srvB := servers[a.ws.LocalAddr().String()], servers[b.ws.LocalAddr().String()]
		mu.Unlock()
		_ = srvA.WriteMessage(websocket.TextMessage, []byte(`["NOTICE","for a"]`))
		_ = srvB.WriteMessage(websocket.TextMessage, []byte(`["NOTICE","for b"]`))
		waitFor(t, "b's notice", func() bool { return len(cur.list()) == 1 })
		if got := cur.list(); got[0] != "for b" || len(old.list()) != 0 {
			t.Fatalf("round %d: b got %q, closed a got %q", round, got, old.list())
		}
		b.Close()
		<-b.Done()
	}
	if reused == 0 {
		t.Fatal("no descriptor number was reused: the test did not test reuse")
	}
}

func skipWithoutPoller(t *testing.T) {
	if pollerOff() {
		t.Skip("no poller: " + EnvNetpoll + "=0, or not Linux")
	}
}

// At the descriptor limit the socket cannot be duplicated out of Go's
// poller: the connection keeps a goroutine reader, which reads the frames
// that came with the upgrade response first, and works.
func TestAtTheDescriptorLimitTheGoroutineReaderTakesOver(t *testing.T) {
	skipWithoutPoller(t)
	url := startChildServer(t)
	keys := testKeys(t, 1)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// The lowest free descriptor number: what the dial's socket will get.
	probe, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	free := int(probe.Fd())
	probe.Close()
	// The dial's socket takes the lowest free number; nothing is left for its duplicate.
	low := lim
	low.Cur = uint64(free + 1)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: keys})
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("Connect at the descriptor limit: %v", err)
	}
	defer func() { c.Close(); <-c.Done() }()
	c.mu.Lock()
	reg := c.reg
	c.mu.Unlock()
	if reg != nil {
		t.Fatal("the socket was registered with the poller: the limit did not bite")
	}
	if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := c.Publish(context.Background(), signed(t, keys, "at the limit"), PublishOptions{}); r.Outcome != OutcomeOK {
		t.Fatalf("%+v", r)
	}
}

// untilClientGoes holds a fake relay's socket open until the client closes
// it (reading and discarding what it sends).
func untilClientGoes(ws *websocket.Conn) {
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
	}
}

// An operation started on a connection that already ended says which side
// closed it and with what code or error, on both read paths (issue 43: a
// bare "connection closed" named neither). Fails without the fix: the
// error was "relay: connection closed" alone.
func TestOperationsAfterTheEndNameWhoClosed(t *testing.T) {
	for _, p := range readPaths {
		url := scriptRelay(t, func(ws *websocket.Conn) {
			_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "restarting"), time.Now().Add(time.Second))
			_, _, _ = ws.ReadMessage()
		})
		c := dialPath(t, url, p.noPoller, nil)
		<-c.Done()
		r := c.Publish(context.Background(), signed(t, testKeys(t, 1), "late"), PublishOptions{})
		if want := `relay: connection closed (closed by relay: code 1012 "restarting")`; r.Outcome != OutcomeError || r.Error != want {
			t.Errorf("%s: after the relay's close: %s %q, want error %q", p.name, r.Outcome, r.Error, want)
		}
		if _, err := c.Subscribe([]Filter{{Kinds: []int{1}}}, SubOptions{ID: "s"}); err == nil || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "code 1012") {
			t.Errorf("%s: subscribe after the relay's close: %v", p.name, err)
		}

		ours := dialPath(t, scriptRelay(t, func(ws *websocket.Conn) { _, _, _ = ws.ReadMessage() }), p.noPoller, nil)
		ours.Close()
		<-ours.Done()
		r = ours.Publish(context.Background(), signed(t, testKeys(t, 1), "late"), PublishOptions{})
		if want := "relay: connection closed (closed by this client)"; r.Error != want {
			t.Errorf("%s: after our Close: %q, want %q", p.name, r.Error, want)
		}
	}
}
