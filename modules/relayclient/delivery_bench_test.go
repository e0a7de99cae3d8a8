package relayclient

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/scenario"
)

// flood answers a REQ for sub "flood:N:GAP" (child server): EOSE, then N
// EVENTs, GAP µs apart, of one timed chat message (an h tag and a send
// time, as a human publishes). With ":sync" the sends fall on multiples of
// GAP on the clock, so every socket gets its frame at the same instants.
func flood(ws *websocket.Conn, req []byte) {
	rest := req[len(`["REQ","`):]
	sub := rest[:bytes.IndexByte(rest, '"')]
	var n, gap int
	if _, err := fmt.Sscanf(string(sub), "flood:%d:%d", &n, &gap); err != nil {
		return
	}
	k := nostr.DeriveKeys("relay-test", nostr.RoleHuman, 7)
	ev, err := k.NewEvent(nostr.KindStreamMessage, [][]string{{"h", "7f0c0000-0000-4000-8000-000000000001"},
		scenario.SentAtTag(time.Now())}, "load message 7-42", time.Now())
	if err != nil {
		return
	}
	frame := append(append([]byte(`["EVENT","`), sub...), `",`...)
	frame = append(ev.AppendJSON(frame), ']')
	if ws.WriteMessage(websocket.TextMessage, append(append([]byte(`["EOSE","`), sub...), `"]`...)) != nil {
		return
	}
	sync := bytes.HasSuffix(sub, []byte(":sync"))
	for i := 0; i < n; i++ {
		if ws.WriteMessage(websocket.TextMessage, frame) != nil {
			return
		}
		d := time.Duration(gap) * time.Microsecond
		if sync {
			now := time.Now()
			d = now.Truncate(d).Add(d).Sub(now)
		}
		time.Sleep(d) // the benchmark's pace between deliveries
	}
}

// cpuTime is this process's user + system CPU so far, and the system part.
func cpuTime(b *testing.B) (all, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkDeliveryPath: the whole read → parse → subscription match →
// callback path of delivered EVENTs on real loopback sockets, the relay in
// another process (its CPU not counted). 100 connections each get their
// share of b.N events; spaced: 2 ms apart, so frames arrive one at a time
// per socket as a wide channel's do (each a wake-up and a read). The callback
// does what a human's does: kind, the h tag, the send time. Reports this
// process's CPU per delivery (issue 16: ≤ 8 µs all-in in a real run), its
// kernel part (the wake-up and reads of each frame), and heap allocations
// per delivery. spaced and queued read with the default reader (the epoll
// loops on Linux); the -goroutine variants with a reader goroutine per
// connection (Config.NoPoller), for the ratio in the same run.
func BenchmarkDeliveryPath(b *testing.B) {
	b.Run("spaced", func(b *testing.B) { deliveryPath(b, 2000, false) })
	b.Run("spaced-goroutine", func(b *testing.B) { deliveryPath(b, 2000, true) })
	// fanout: spaced, but every socket's frame at the same instant, as a
	// wide channel's message reaches all its members at once.
	b.Run("fanout", func(b *testing.B) { deliveryPath(b, -2000, false) })
	b.Run("fanout-goroutine", func(b *testing.B) { deliveryPath(b, -2000, true) })
	// queued: frames sent back to back, as when the reader falls behind;
	// what a frame costs without a wake-up of its own.
	b.Run("queued", func(b *testing.B) { deliveryPath(b, 0, false) })
	b.Run("queued-goroutine", func(b *testing.B) { deliveryPath(b, 0, true) })
}

// deliveryPath: gapMicros < 0 is that gap, synchronised across sockets.
func deliveryPath(b *testing.B, gapMicros int, noPoller bool) {
	const conns = 100
	url := startChildServer(b)
	keys := testKeys(b, 1)
	cs := make([]*Conn, conns)
	for i := range cs {
		c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: keys, NoPoller: noPoller})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		cs[i] = c
	}
	per := (b.N + conns - 1) / conns
	var got, timed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(conns * per)
	onEvent := func(v *nostr.EventView, at time.Time, live bool) {
		if v.Kind != nostr.KindStreamMessage || !live {
			return
		}
		if h, _ := v.TagValue("h", 1); len(h) == 0 {
			return
		}
		if sv, ok := v.TagValue(scenario.SentTag, 2); ok {
			if _, ok := scenario.ParseSentAt(sv); ok {
				timed.Add(1)
			}
		}
		got.Add(1)
		wg.Done()
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	cpu0, sys0 := cpuTime(b)
	for _, c := range cs {
		id := "flood:" + strconv.Itoa(per) + ":" + strconv.Itoa(max(gapMicros, -gapMicros))
		if gapMicros < 0 {
			id += ":sync"
		}
		if _, err := c.Subscribe([]Filter{{Kinds: []int{9}}}, SubOptions{ID: id, OnEventView: onEvent}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	cpu1, sys1 := cpuTime(b)
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	n := float64(got.Load())
	if timed.Load() != got.Load() {
		b.Fatalf("%d of %d events had a send time", timed.Load(), got.Load())
	}
	b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/n, "cpu-µs/delivery")
	b.ReportMetric(float64((sys1-sys0).Nanoseconds())/1e3/n, "sys-µs/delivery")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/delivery")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/delivery")
}
