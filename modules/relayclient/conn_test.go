package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

func connect(t *testing.T, fr *fakeRelay, sink Sink, mod func(*Config)) *Conn {
	t.Helper()
	cfg := Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink}
	if mod != nil {
		mod(&cfg)
	}
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close(); <-c.Done() })
	return c
}

func TestConnectAuthenticatesAndRecordsBothOps(t *testing.T) {
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	if !c.Authenticated() {
		t.Fatal("not authenticated")
	}
	if got := sink.Count(OpConnect, OutcomeOK); got != 1 {
		t.Fatalf("connect ok = %d, want 1 (%+v)", got, sink.Results())
	}
	if got := sink.Count(OpAuth, OutcomeOK); got != 1 {
		t.Fatalf("auth ok = %d, want 1 (%+v)", got, sink.Results())
	}
	fr.mu.Lock()
	ev := fr.authEvents[0]
	fr.mu.Unlock()
	if ev.Kind != 22242 || ev.TagValue("challenge") != testChallenge || ev.TagValue("relay") != fr.wsURL() {
		t.Fatalf("auth event tags %v", ev.Tags)
	}
	if c.RelayURL() != fr.wsURL() {
		t.Fatalf("RelayURL %q", c.RelayURL())
	}
}

func TestConnectAddrDialsPlaintextButClaimsPublicURL(t *testing.T) {
	// The relay believes it is wss://c1.buzz.test (RELAY_URL is wss://…);
	// we reach it at its plaintext address with the community Host header.
	fr := newFakeRelay(t, func(fr *fakeRelay) { fr.scheme = "wss" })
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) {
		cfg.Target = Target{WSURL: "wss://relay.example.org", Host: "c1.buzz.test", ConnectAddr: fr.addr()}
	})
	fr.mu.Lock()
	host, ev := fr.hosts[0], fr.authEvents[0]
	fr.mu.Unlock()
	if host != "c1.buzz.test" {
		t.Fatalf("Host header %q, want c1.buzz.test", host)
	}
	if got := ev.TagValue("relay"); got != "wss://c1.buzz.test" {
		t.Fatalf("relay tag %q, want wss://c1.buzz.test", got)
	}
	if !c.Authenticated() || sink.Count(OpAuth, OutcomeOK) != 1 {
		t.Fatalf("auth not ok: %+v", sink.Results())
	}
}

func TestConnectWithHostOnlyReplacesTheURLHost(t *testing.T) {
	ep, err := Target{WSURL: "wss://relay.example.org/", Host: "c2.example.org"}.ws()
	if err != nil {
		t.Fatal(err)
	}
	if ep.dialURL != "wss://c2.example.org/" || ep.relayURL != "wss://c2.example.org" || ep.host != "" {
		t.Fatalf("%+v", ep)
	}
	// connect_addr without a community host has no effect (buzz-loadgen).
	ep, _ = Target{WSURL: "ws://127.0.0.1:3000", ConnectAddr: "127.0.0.1:9"}.ws()
	if ep.dialURL != "ws://127.0.0.1:3000/" || ep.relayURL != "ws://127.0.0.1:3000" {
		t.Fatalf("%+v", ep)
	}
	for _, bad := range []Target{
		{WSURL: "http://x"},
		{WSURL: "ws://x", Host: "a/b"},
		{WSURL: "ws://x", Host: "h", ConnectAddr: "nocolon"},
	} {
		if _, err := bad.ws(); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestAuthWithNIPOATag(t *testing.T) {
	fr := newFakeRelay(t, nil)
	tag := []string{"auth", testKeys(t, 9).PubKey(), "kind=9", strings.Repeat("ab", 64)}
	connect(t, fr, nil, func(cfg *Config) { cfg.OATag = tag })
	fr.mu.Lock()
	ev := fr.authEvents[0]
	fr.mu.Unlock()
	got := ev.Tag("auth")
	if len(got) != 4 || got[1] != tag[1] || got[2] != "kind=9" {
		t.Fatalf("auth tag %v", got)
	}
}

func TestAuthRejectionIsAnErrorAndClosesTheConnection(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   Outcome
	}{
		{"auth-required: verification failed", OutcomeError},
		{"blocked: you are banned from this community", OutcomeError},
		{"rate-limited: quota exceeded; retry in 4s", OutcomeThrottled},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			fr := newFakeRelay(t, func(fr *fakeRelay) {
				fr.authReply = func(*nostr.Event, error) (bool, string) { return false, tc.reason }
			})
			sink := &CollectSink{}
			_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink})
			var oe *OpError
			if !errors.As(err, &oe) || oe.Result.Op != OpAuth || oe.Result.Outcome != tc.want {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(oe.Result.Error, tc.reason) {
				t.Fatalf("error %q does not quote %q", oe.Result.Error, tc.reason)
			}
			if sink.Count(OpAuth, tc.want) != 1 || sink.Count(OpConnect, OutcomeOK) != 1 {
				t.Fatalf("%+v", sink.Results())
			}
		})
	}
}

func TestConnectTimeoutWithoutChallenge(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) { fr.noChallenge = true })
	sink := &CollectSink{}
	start := time.Now()
	_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1),
		Sink: sink, ConnectTimeout: 150 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no AUTH challenge") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	if sink.Count(OpAuth, OutcomeError) != 1 {
		t.Fatalf("%+v", sink.Results())
	}
}

func TestUpgradeRefusals(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   Outcome
		retry  time.Duration
	}{
		{404, "relay: no community is configured for this host", OutcomeError, 0},
		{503, "relay restarting", OutcomeError, 0},
		{429, `{"error":"rate-limited: quota exceeded; retry in 7s"}`, OutcomeThrottled, 7 * time.Second},
	} {
		fr := newFakeRelay(t, func(fr *fakeRelay) {
			fr.onUpgrade = func(*http.Request) (int, string) { return tc.status, tc.body }
		})
		sink := &CollectSink{}
		_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink})
		var oe *OpError
		if !errors.As(err, &oe) || oe.Result.Op != OpConnect || oe.Result.Outcome != tc.want || oe.Result.RetryAfter != tc.retry {
			t.Fatalf("%d: err = %v (%+v)", tc.status, err, oe)
		}
		if !strings.Contains(oe.Result.Error, fmt.Sprint(tc.status)) || !strings.Contains(oe.Result.Error, strings.Fields(tc.body)[1]) {
			t.Fatalf("%d: error %q should name the status and quote the body", tc.status, oe.Result.Error)
		}
		if len(sink.Op(OpAuth)) != 0 {
			t.Fatalf("auth recorded after a refused upgrade")
		}
	}
}

func TestBadFramesAreCountedNotFatal(t *testing.T) {
	k := testKeys(t, 3)
	good := signed(t, k, "ok")
	badShape := strings.Replace(string(good.AppendJSON(nil)), good.ID, "zz", 1)
	frames := []struct{ frame, quoteMust string }{
		{`not json at all`, "not json"},
		{`["EVENT","s1",{"id":`, "truncated"},
		{`["FOO","x"]`, `unknown verb "FOO"`},
		{`{"verb":"OK"}`, "not a JSON array"},
		{`["OK","` + strings.Repeat("ab", 32) + `",true,""]`, "no publish in flight"},
		{`["EVENT","nosuchsub",` + string(good.AppendJSON(nil)) + `]`, "not open"},
		{`["EVENT","s1",` + badShape + `]`, "64 hex"},
		{`["EOSE","nosuchsub"]`, "not open"},
		{`["COUNT","nosuchcount",{"count":1}]`, "no COUNT in flight"},
		{`["CLOSED","nosuchsub","error: what"]`, "not open"},
		{`["NOTICE"]`, "missing element"},
		{`["OK","x","yes",""]`, "true or false"},
		{`["EVENT","s1",` + string(good.AppendJSON(nil)) + `] trailing`, "after the frame"},
		{strings.Repeat("x", 3000), "frame too large"},
	}
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) { cfg.MaxFrameBytes = 2048 })
	for _, f := range frames {
		fr.conn(0).send(f.frame)
	}
	waitFor(t, "all bad frames", func() bool { return c.Stats().BadFrames == int64(len(frames)) })
	bad := sink.Op(OpBadFrame)
	if len(bad) != len(frames) {
		t.Fatalf("%d bad_frame results", len(bad))
	}
	for i, r := range bad {
		if r.Outcome != OutcomeError || !strings.Contains(r.Error, frames[i].quoteMust) {
			t.Errorf("frame %d: %q does not contain %q", i, r.Error, frames[i].quoteMust)
		}
		if len(r.Error) > 600 {
			t.Errorf("frame %d: error not trimmed (%d bytes)", i, len(r.Error))
		}
	}
	if !strings.Contains(bad[0].Error, `"not json at all"`) {
		t.Errorf("the error should quote what arrived: %q", bad[0].Error)
	}
	// Still usable.
	if r := c.Publish(context.Background(), signed(t, k, "after"), PublishOptions{}); r.Outcome != OutcomeOK {
		t.Fatalf("connection unusable after bad frames: %+v", r)
	}
}

// After a mix of everything (ok, relay drop, our close, subscriptions,
// timeouts, HTTP), no goroutine of ours is left behind.
func TestNoGoroutineLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		fr := newFakeRelay(t, func(fr *fakeRelay) {
			fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
				switch verb {
				case "EVENT":
					c.sendf(`["OK",%q,true,""]`, eventID(raw))
				case "REQ":
					c.sendf(`["EOSE",%q]`, subID(raw))
				case "COUNT":
					c.sendf(`["COUNT",%q,{"count":1}]`, subID(raw))
				}
			}
		})
		defer fr.close()
		fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) { _, _ = w.Write([]byte(`[]`)) })
		defer fh.srv.Close()
		tr, err := NewTransport(TransportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.CloseIdleConnections()
		h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Transport: tr})
		k := testKeys(t, 1)
		var conns []*Conn
		for i := 0; i < 10; i++ {
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: k})
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{}); err != nil {
				t.Fatal(err)
			}
			// One subscription left waiting on a long EOSE timer, one publish
			// left in flight: both must be settled by the close.
			_, _ = c.Subscribe([]Filter{{Kinds: []int{1}}}, SubOptions{ID: "pending", EOSETimeout: time.Hour})
			if r := c.Publish(context.Background(), signed(t, k, fmt.Sprint(i)), PublishOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
			if _, r := c.Count(context.Background(), []Filter{{Kinds: []int{9}}}, CountOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
			if _, r := h.Query(context.Background(), nil, CallOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
		}
		for i, c := range conns {
			if i%2 == 0 {
				c.Close()
			} else {
				_ = fr.conn(i).ws.Close() // the relay drops it
			}
		}
		for _, c := range conns {
			<-c.Done()
		}
		// A failed dial leaves nothing either.
		_, _ = Connect(context.Background(), Config{Target: Target{WSURL: "ws://127.0.0.1:1"}, Keys: k})
	}()
	if !waitfor.Within(5*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Fatalf("%d goroutines, started with %d:\n%s", runtime.NumGoroutine(), base, buf[:n])
	}
}

func TestLocalAddrBindsTheSourceAddress(t *testing.T) {
	fr := newFakeRelay(t, nil)
	connect(t, fr, nil, func(cfg *Config) { cfg.Target.LocalAddr = "127.0.0.2" })
	fr.mu.Lock()
	remote := fr.remotes[0]
	fr.mu.Unlock()
	if !strings.HasPrefix(remote, "127.0.0.2:") {
		t.Fatalf("remote address %s, want 127.0.0.2:*", remote)
	}
	if _, err := Dial(context.Background(), Config{Target: Target{WSURL: fr.wsURL(), LocalAddr: "not-an-ip"}}); err == nil {
		t.Fatal("bad local address accepted")
	}
}

func TestReadIdleTimeout(t *testing.T) {
	// Silent relay: the connection ends as lost, and in-flight work errors.
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) { cfg.ReadIdleTimeout = 150 * time.Millisecond })
	done := make(chan Result, 1)
	_ = c.PublishAsync(signed(t, testKeys(t, 1), "x"), PublishOptions{}, func(r Result) { done <- r })
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection not ended")
	}
	if c.Err() == nil || !strings.Contains(c.Err().Error(), "no frame or ping") {
		t.Fatalf("Err = %v", c.Err())
	}
	if r := <-done; r.Outcome != OutcomeError {
		t.Fatalf("%+v", r)
	}

	// Pings keep it alive.
	fr2 := newFakeRelay(t, nil)
	c2 := connect(t, fr2, nil, func(cfg *Config) { cfg.ReadIdleTimeout = 400 * time.Millisecond })
	srv := fr2.conn(0)
	var pongs atomic.Int32
	srv.ws.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				_ = srv.ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second))
			}
		}
	}()
	defer close(stop)
	// Two idle timeouts' worth of pings answered: alive past the timeout
	// because of them (the pongs come back through the server's reader).
	waitfor.Until(t, "40 pongs (two idle timeouts of pings)", 10*time.Second, func() bool { return pongs.Load() >= 40 })
	if c2.Err() != nil {
		t.Fatalf("pinged connection ended: %v", c2.Err())
	}
	select {
	case <-c2.Done():
		t.Fatal("pinged connection ended")
	default:
	}
}

// Compression is never negotiated (permessage-deflate costs ~830 KiB
// per connection). The client must not even offer it in the upgrade request.
func TestUpgradeNeverOffersCompression(t *testing.T) {
	var mu sync.Mutex
	var offered []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onUpgrade = func(r *http.Request) (int, string) {
			mu.Lock()
			offered = append(offered, r.Header.Values("Sec-WebSocket-Extensions")...)
			mu.Unlock()
			return 0, ""
		}
	})
	c := connect(t, fr, &CollectSink{}, nil)
	if !c.Authenticated() {
		t.Fatal("not authenticated")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(offered) != 0 {
		t.Fatalf("the upgrade offered extensions %q; compression must never be negotiated", offered)
	}
}

// An AUTH whose OK comes after the client stopped waiting is one error (no
// OK for AUTH), and the OK when it comes is late, not a bad frame: under a
// 19,000-client ramp every timed-out AUTH also counted a bad_frame.
func TestAuthDeadlineIsAnErrorAndALateOKIsNotABadFrame(t *testing.T) {
	release := make(chan struct{})
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.authReply = func(*nostr.Event, error) (bool, string) { <-release; return true, "" }
	})
	sink := &CollectSink{}
	c, err := Dial(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.Auth(ctx)
	var oe *OpError
	if !errors.As(err, &oe) || !strings.Contains(oe.Result.Error, "no OK for AUTH") {
		t.Fatalf("err = %v", err)
	}
	close(release)
	waitFor(t, "late OK", func() bool { return c.Stats().LateFrames == 1 })
	if c.Stats().BadFrames != 0 || sink.Count(OpAuth, OutcomeError) != 1 || len(sink.Op(OpBadFrame)) != 0 {
		t.Fatalf("late AUTH OK counted: %+v %+v", c.Stats(), sink.Results())
	}
}
