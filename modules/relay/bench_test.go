package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// benchConn is a minimal client without a reader goroutine, so the client
// side adds little to what the benchmarks measure.
type benchConn struct {
	ws *websocket.Conn
}

func benchDial(b *testing.B, r *Relay, k *nostr.Keys) *benchConn {
	b.Helper()
	d := websocket.Dialer{ReadBufferSize: 512, WriteBufferSize: 512, WriteBufferPool: &sync.Pool{}}
	ws, _, err := d.Dial(r.URLs().WS+"/", nil)
	if err != nil {
		b.Fatal(err)
	}
	_, msg, err := ws.ReadMessage()
	if err != nil {
		b.Fatal(err)
	}
	var f []string
	json.Unmarshal(msg, &f)
	auth, _ := k.NewEvent(22242, [][]string{{"relay", r.URLs().WS}, {"challenge", f[1]}}, "", time.Now())
	frame, _ := json.Marshal([]any{"AUTH", auth})
	ws.WriteMessage(websocket.TextMessage, frame)
	if _, msg, err = ws.ReadMessage(); err != nil || !json.Valid(msg) {
		b.Fatalf("auth: %v", err)
	}
	return &benchConn{ws: ws}
}

func benchRelay(b *testing.B) *Relay {
	return startRelay(b, func(c *Config) {
		c.MaxConnections = 20000
		c.AuthTimeout = time.Minute
	})
}

// BenchmarkPublishVerified: accepted EVENTs per second from 100 connections,
// signature verification on (the relay's ingest ceiling on this machine).
func BenchmarkPublishVerified(b *testing.B) {
	r := benchRelay(b)
	const conns = 100
	owner := nostr.DeriveKeys("bench", nostr.RoleOwner, 0)
	oc := benchDial(b, r, owner)
	ch := newUUID()
	create, _ := owner.NewEvent(9007, [][]string{{"h", ch}, {"name", "bench"}}, "", time.Now())
	f, _ := json.Marshal([]any{"EVENT", create})
	oc.ws.WriteMessage(websocket.TextMessage, f)
	oc.ws.ReadMessage()

	cs := make([]*benchConn, conns)
	keys := make([]*nostr.Keys, conns)
	for i := range cs {
		keys[i] = nostr.DeriveKeys("bench", nostr.RoleHuman, i)
		cs[i] = benchDial(b, r, keys[i])
	}
	// Pre-sign so the timed part is the relay's work (plus client framing).
	frames := make([][][]byte, conns)
	now := time.Now()
	for i := 0; i < b.N; i++ {
		c := i % conns
		e, _ := keys[c].NewEvent(9, [][]string{{"h", ch}}, fmt.Sprint("m", i), now)
		fr, _ := json.Marshal([]any{"EVENT", e})
		frames[c] = append(frames[c], fr)
	}
	var accepted atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(2)
		go func(c *benchConn, fs [][]byte) {
			defer wg.Done()
			for _, fr := range fs {
				c.ws.WriteMessage(websocket.TextMessage, fr)
			}
		}(cs[i], frames[i])
		go func(c *benchConn, n int) {
			defer wg.Done()
			for j := 0; j < n; j++ {
				_, msg, err := c.ws.ReadMessage()
				if err != nil {
					return
				}
				var ok []any
				if json.Unmarshal(msg, &ok) == nil && len(ok) == 4 && ok[2] == true {
					accepted.Add(1)
				}
			}
		}(cs[i], len(frames[i]))
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if accepted.Load() != int64(b.N) {
		b.Fatalf("accepted %d of %d", accepted.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkFanout1000: live deliveries per second to 1,000 channel
// subscribers, verification on. Published in batches that fit the send
// queue, so no delivery is dropped as a slow consumer.
func BenchmarkFanout1000(b *testing.B) {
	r := benchRelay(b)
	const subs = 1000
	pubKey := nostr.DeriveKeys("bench", nostr.RoleOwner, 1)
	pub := benchDial(b, r, pubKey)
	ch := newUUID()
	create, _ := pubKey.NewEvent(9007, [][]string{{"h", ch}, {"name", "fan"}}, "", time.Now())
	f, _ := json.Marshal([]any{"EVENT", create})
	pub.ws.WriteMessage(websocket.TextMessage, f)
	pub.ws.ReadMessage()

	var received atomic.Int64
	var wg sync.WaitGroup
	conns := make([]*benchConn, subs)
	for i := 0; i < subs; i++ {
		c := benchDial(b, r, nostr.DeriveKeys("bench-sub", nostr.RoleHuman, i))
		req, _ := json.Marshal([]any{"REQ", "s", map[string]any{"kinds": []int{9}, "#h": []string{ch}, "limit": 0}})
		c.ws.WriteMessage(websocket.TextMessage, req)
		c.ws.ReadMessage() // EOSE
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, _, err := c.ws.ReadMessage(); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	events := make([][]byte, b.N)
	for i := range events {
		e, _ := pubKey.NewEvent(9, [][]string{{"h", ch}}, fmt.Sprint("m", i), time.Now())
		events[i], _ = json.Marshal([]any{"EVENT", e})
	}
	const batch = 200
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += batch {
		end := min(i+batch, b.N)
		for _, fr := range events[i:end] {
			pub.ws.WriteMessage(websocket.TextMessage, fr)
		}
		for j := i; j < end; j++ {
			pub.ws.ReadMessage()
		}
		want := int64(end) * subs
		waitfor.Until(b, "every delivery", time.Minute, func() bool { return received.Load() >= want })
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*subs/elapsed.Seconds(), "deliveries/s")
	for _, c := range conns {
		c.ws.Close()
	}
	wg.Wait()
	// Let the relay reap its side before the next benchmark measures memory.
	waitfor.Within(5*time.Second, func() bool { return r.Stats().Connections <= 1 })
}

// BenchmarkIdleConnectionMemory: the relay's memory per idle authenticated
// connection. The clients run in a child process (this test binary, see
// TestIdleClientHelper), so only the relay's side is measured: Go heap and
// goroutine stacks, and the process RSS.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	r := benchRelay(b)
	const n = 500
	for i := 0; i < b.N && i < 3; i++ {
		var before, after runtime.MemStats
		for gc := 0; gc < 4; gc++ {
			runtime.GC()
		}
		runtime.ReadMemStats(&before)
		rss0 := rssBytes()
		stop := startIdleClients(b, r, n)
		waitfor.Until(b, "the idle clients held", 30*time.Second, func() bool { return r.Stats().Connections >= int64(n) })
		for gc := 0; gc < 4; gc++ {
			runtime.GC() // each cycle may halve an idle goroutine's grown stack
		}
		runtime.ReadMemStats(&after)
		rss1 := rssBytes()
		heap := (float64(after.HeapInuse) - float64(before.HeapInuse)) / n
		stack := (float64(after.StackInuse) - float64(before.StackInuse)) / n
		b.ReportMetric(heap+stack, "bytes/conn")
		b.ReportMetric(stack, "stack-bytes/conn")
		if rss0 > 0 && rss1 > 0 {
			b.ReportMetric(float64(rss1-rss0)/n, "rss-bytes/conn")
		}
		stop()
		waitfor.Within(10*time.Second, func() bool { return r.Stats().Connections == 0 }) // the relay reaped the sockets
	}
}

// startIdleClients starts n idle authenticated clients of r in a child
// process (this test binary, see TestIdleClientHelper) and returns once they
// are connected; stop closes them and waits for the child.
func startIdleClients(b *testing.B, r *Relay, n int) (stop func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClientHelper$")
	cmd.Env = append(os.Environ(), "LOCALRELAY_IDLE_CLIENT="+r.URLs().WS, "LOCALRELAY_IDLE_N="+strconv.Itoa(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		stdin.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		stop()
		b.Fatalf("client helper: %q %v %s", line, err, stderr.String())
	}
	return stop
}

// rssBytes reads the process's resident set size (Linux), or 0.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	fmt.Sscan(string(b), &size, &resident)
	return resident * int64(os.Getpagesize())
}

// TestIdleClientHelper is the client side of BenchmarkIdleConnectionMemory,
// run in a child process; it skips in a normal test run.
func TestIdleClientHelper(t *testing.T) {
	u := os.Getenv("LOCALRELAY_IDLE_CLIENT")
	if u == "" {
		t.Skip("helper process for BenchmarkIdleConnectionMemory")
	}
	n, _ := strconv.Atoi(os.Getenv("LOCALRELAY_IDLE_N"))
	var conns []*websocket.Conn
	for i := 0; i < n; i++ {
		ws := dialAuthed(t, u, 512, nostr.DeriveKeys("idle", nostr.RoleHuman, i))
		conns = append(conns, ws)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) // hold the sockets until the parent closes stdin
	for _, c := range conns {
		c.Close()
	}
}

// dialAuthed opens a WebSocket to the relay at u (a child process's
// client), answers its NIP-42 challenge as k and waits for the OK.
func dialAuthed(t *testing.T, u string, readBuf int, k *nostr.Keys) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{ReadBufferSize: readBuf, WriteBufferSize: 512}
	ws, _, err := d.Dial(u+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var f []string
	json.Unmarshal(msg, &f)
	auth, _ := k.NewEvent(22242, [][]string{{"relay", u}, {"challenge", f[1]}}, "", time.Now())
	frame, _ := json.Marshal([]any{"AUTH", auth})
	ws.WriteMessage(websocket.TextMessage, frame)
	if _, msg, err = ws.ReadMessage(); err != nil || !strings.Contains(string(msg), "true") {
		t.Fatalf("auth: %s %v", msg, err)
	}
	return ws
}
