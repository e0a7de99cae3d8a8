package localrelay

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

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
		for received.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*subs/elapsed.Seconds(), "deliveries/s")
	for _, c := range conns {
		c.ws.Close()
	}
	wg.Wait()
}

// BenchmarkIdleConnectionMemory: Go heap + stacks per idle authenticated
// connection. Client and relay share the process, so the figure includes
// the small benchmark client (512-byte buffers, no goroutine): an upper bound.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	r := benchRelay(b)
	const n = 500
	var before, after runtime.MemStats
	// Each round opens n sockets; a few rounds give a stable figure, and
	// more would only exhaust descriptors, so b.N beyond 3 is not used.
	for i := 0; i < b.N && i < 3; i++ {
		runtime.GC()
		runtime.ReadMemStats(&before)
		cs := make([]*benchConn, n)
		for j := range cs {
			cs[j] = benchDial(b, r, nostr.DeriveKeys("idle", nostr.RoleHuman, j))
		}
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := (float64(after.HeapInuse) - float64(before.HeapInuse)) / n
		stack := (float64(after.StackInuse) - float64(before.StackInuse)) / n
		b.ReportMetric(heap+stack, "bytes/conn")
		b.ReportMetric(stack, "stack-bytes/conn")
		for _, c := range cs {
			c.ws.Close()
		}
	}
}
