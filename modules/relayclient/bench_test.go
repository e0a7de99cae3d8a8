package relayclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

// The benchmarks that measure this client run a minimal relay in a child
// process (this test binary re-executed), so its memory and CPU stay out
// of the figures, as a real relay's would.
const childServerEnv = "BUZZLOAD_RELAY_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childServerEnv) == "1" {
		runChildServer()
		return
	}
	os.Exit(m.Run())
}

// runChildServer: AUTH challenge on connect; OK true for AUTH and EVENT
// (id found by a byte scan); EOSE for REQ; CLOSED "" for CLOSE; for a
// REQ whose sub id is "flood:N:GAP", EOSE then N EVENTs GAP µs apart
// (see BenchmarkDeliveryPath). It prints
// its address and serves until stdin closes.
func runChildServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`["AUTH","`+testChallenge+`"]`))
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var out []byte
			switch {
			case bytes.HasPrefix(b, []byte(`["EVENT",`)), bytes.HasPrefix(b, []byte(`["AUTH",`)):
				i := bytes.Index(b, []byte(`"id":"`))
				if i < 0 || i+6+64 > len(b) {
					continue
				}
				out = append(append([]byte(`["OK","`), b[i+6:i+6+64]...), `",true,""]`...)
			case bytes.HasPrefix(b, []byte(`["REQ","flood:`)):
				flood(ws, b)
				continue
			case bytes.HasPrefix(b, []byte(`["REQ",`)), bytes.HasPrefix(b, []byte(`["CLOSE",`)):
				verb := "EOSE"
				if b[2] == 'C' {
					verb = "CLOSED"
				}
				rest := b[bytes.IndexByte(b, ',')+1:]
				j := bytes.IndexByte(rest, '"')
				k := bytes.IndexByte(rest[j+1:], '"')
				if j < 0 || k < 0 {
					continue
				}
				id := rest[j+1 : j+1+k]
				out = append(append([]byte(`["`+verb+`","`), id...), '"')
				if verb == "CLOSED" {
					out = append(out, `,""`...)
				}
				out = append(out, ']')
			default:
				continue
			}
			if err := ws.WriteMessage(websocket.TextMessage, out); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(ln.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // parent gone or done
	os.Exit(0)
}

// startChildServer starts the child relay and returns its ws:// URL.
func startChildServer(b testing.TB) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || len(line) < 2 {
		b.Fatalf("child server: %q %v", line, err)
	}
	return "ws://" + line[:len(line)-1]
}

// Goroutines per open connection, subscriptions and in-flight publishes
// included: none with the poller (its loops, at most GOMAXPROCS, serve them
// all), exactly one (the reader) without. The relay is in another process
// so only our goroutines are counted.
func TestGoroutinesPerConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	url := startChildServer(t)
	for _, noPoller := range []bool{false, true} {
		const n = 20
		keys := testKeys(t, 1)
		g0 := runtime.NumGoroutine()
		var conns []*Conn
		for i := 0; i < n; i++ {
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: keys, NoPoller: noPoller})
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			for j := 0; j < 3; j++ {
				if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if r := c.Publish(context.Background(), signed(t, keys, fmt.Sprint(i)), PublishOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
		}
		d := runtime.NumGoroutine() - g0
		if lo, hi := n, n+2; noPoller && (d < lo || d > hi) {
			t.Fatalf("without the poller: %d goroutines for %d connections", d, n)
		}
		if hi := runtime.GOMAXPROCS(0) + 2; !noPoller && !pollerOff() && d > hi {
			t.Fatalf("with the poller: %d goroutines for %d connections (at most %d)", d, n, hi)
		}
		for _, c := range conns {
			c.Close()
			<-c.Done()
		}
		// The poller's loops end once their last connection has gone.
		waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= g0 })
	}
}

// pollerOff: the environment turned the poller off for this test run, or
// this system has none.
func pollerOff() bool {
	_, err := defaultPoller()
	return os.Getenv(EnvNetpoll) == "0" || err != nil
}

// BenchmarkParseFrameEvent: an inbound EVENT frame (a chat message with
// four tags) parsed into a nostr.Event. Budget: ≤ 6 µs.
func BenchmarkParseFrameEvent(b *testing.B) {
	frame := eventFrame("sub-1", sampleEvent(b))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFrameOK(b *testing.B) {
	frame := []byte(`["OK","` + string(bytes.Repeat([]byte("ab"), 32)) + `",true,""]`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishRoundTrip: publish → OK on loopback against a relay in
// another process, closed loop, one connection. Reports p50/p99 of the
// recorded publish durations (events are signed before the clock starts).
func BenchmarkPublishRoundTrip(b *testing.B) {
	url := startChildServer(b)
	c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: testKeys(b, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	k := testKeys(b, 1)
	events := make([]*nostr.Event, b.N)
	for i := range events {
		events[i] = signed(b, k, fmt.Sprint("bench ", i))
	}
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := c.Publish(context.Background(), events[i], PublishOptions{})
		if r.Outcome != OutcomeOK {
			b.Fatalf("%+v", r)
		}
		durs = append(durs, r.Duration)
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[min(len(durs)-1, len(durs)*99/100)].Microseconds()), "p99-µs")
}

// BenchmarkIdleConnMemory: heap + goroutine stack per connected,
// authenticated, subscribed idle connection, over 500 connections (the
// relay runs in another process). Budget context: a whole subscribed human
// client should stay ≤ 100 KB.
func BenchmarkIdleConnMemory(b *testing.B) {
	const n = 500
	url := startChildServer(b)
	keys := testKeys(b, 1)
	for range b.N {
		conns := make([]*Conn, 0, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for i := 0; i < n; i++ {
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: keys})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {"chan"}}}}, SubOptions{}); err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		time.Sleep(50 * time.Millisecond) // let pooled buffers go back
		runtime.GC()
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		stack := float64(after.StackInuse) - float64(before.StackInuse)
		b.ReportMetric(heap/n, "heap-B/conn")
		b.ReportMetric(stack/n, "stack-B/conn")
		b.ReportMetric((heap+stack)/n, "B/conn")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/conn")
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close(); <-c.Done() }()
		}
		wg.Wait()
	}
}

// BenchmarkScanFrameEvent: the same EVENT frame as the reader goroutine
// reads it (in place, nothing decoded but the id, pubkey, kind and
// created_at). Budget: no allocation.
func BenchmarkScanFrameEvent(b *testing.B) {
	frame := eventFrame("sub-1", sampleEvent(b))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	var f inFrame
	for b.Loop() {
		if err := scanFrame(frame, &f); err != nil {
			b.Fatal(err)
		}
	}
}
