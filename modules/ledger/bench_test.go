package ledger

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// wide is a channel of subs members, each subscribed and live, and events
// messages published into it (signed outside the timer).
func wide(b *testing.B, l *Ledger, subs, events int) ([]*Sub, []*nostr.Event, [][]byte) {
	b.Helper()
	ss := make([]*Sub, subs)
	for i := range ss {
		ss[i] = l.Open(pk(i), "c0", "s"+strconv.Itoa(i), []relayclient.Filter{
			{Kinds: []int{nostr.KindStreamMessage, nostr.KindTyping}, Tags: map[string][]string{"h": {"A"}}, LimitZero: true}}).(*Sub)
		ss[i].Live(at(0))
	}
	k := nostr.DeriveKeys("ledger-bench", nostr.RoleHuman, 1)
	evs := make([]*nostr.Event, events)
	raws := make([][]byte, events)
	for i := range evs {
		e := &nostr.Event{Kind: nostr.KindStreamMessage, CreatedAt: t0.Unix(), Content: "m" + strconv.Itoa(i), Tags: [][]string{{"h", "A"}}}
		if err := k.Sign(e); err != nil {
			b.Fatal(err)
		}
		evs[i], raws[i] = e, e.AppendJSON(nil)
	}
	return ss, evs, raws
}

// BenchmarkLedgerMemory: 1,000,000 expected deliveries waiting at once
// (1,000 events into a channel of 1,000 live subscribers, none delivered
// yet): the heap they hold (issue 40: at most 64 MB), then all delivered
// and judged: what is left.
func BenchmarkLedgerMemory(b *testing.B) {
	for range b.N {
		l := New(Config{})
		ss, evs, _ := wide(b, l, 1000, 1000)
		runtime.GC()
		var m0, m1, m2 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i, e := range evs {
			l.Sent(e, "c0", "ws", at(i))
			l.Settled(e.ID, true, at(i+1))
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		var v nostr.EventView
		for _, e := range evs {
			raw := e.AppendJSON(nil)
			sc := wire.New(raw)
			if err := nostr.ScanEventView(&sc, &v); err != nil {
				b.Fatal(err)
			}
			for _, s := range ss {
				s.Delivered(&v, at(2000))
			}
		}
		l.Tick(at(2000).Add(time.Hour))
		runtime.GC()
		runtime.ReadMemStats(&m2)
		if r := l.Report(); r.Expected != 1_000_000 || r.Received != 1_000_000 {
			b.Fatalf("counts %+v", r.LedgerCounts)
		}
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/1e6, "MB/1M-pairs-waiting")
		b.ReportMetric(float64(int64(m2.HeapAlloc)-int64(m0.HeapAlloc))/1e6, "MB-after-judging")
		runtime.KeepAlive(ss)
	}
}

// BenchmarkLedgerDelivery: what the ledger adds to one live delivery
// (decode the id, find the event and the pair, count it), against what
// the client does with every delivery anyway, in the same run: scanning
// the event in place (nostr.ScanEventView, the cheapest part of the
// delivery path). Events into a channel of 100 subscribers, each judged
// as the run goes (Sent, Settled, Delivered, Tick).
func BenchmarkLedgerDelivery(b *testing.B) {
	const subs = 100
	b.Run("scan-only", func(b *testing.B) {
		l := New(Config{})
		_, _, raws := wide(b, l, 1, 64)
		var v nostr.EventView
		b.ResetTimer()
		for i := range b.N {
			sc := wire.New(raws[i%len(raws)])
			if err := nostr.ScanEventView(&sc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan+ledger", func(b *testing.B) {
		l := New(Config{Patience: time.Second})
		n := b.N/subs + 1
		ss, evs, raws := wide(b, l, subs, n)
		var v nostr.EventView
		b.ResetTimer()
		d := 0
		for i, e := range evs {
			now := at(i)
			l.Sent(e, "c0", "ws", now)
			for _, s := range ss {
				if d == b.N {
					break
				}
				sc := wire.New(raws[i])
				if err := nostr.ScanEventView(&sc, &v); err != nil {
					b.Fatal(err)
				}
				s.Delivered(&v, now)
				d++
			}
			l.Settled(e.ID, true, now)
			if i%100 == 0 {
				l.Tick(now)
			}
		}
	})
}
