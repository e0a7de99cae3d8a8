package extension

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/audit"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// BenchmarkDurabilityAudit: the audit of N acknowledged events (default
// 100,000; BUZZLOAD_BENCH_AUDIT_EVENTS) against the embedded relay, after
// they were published and acknowledged (outside the timer). It reports the
// audit's seconds (issue 26: within 60 s) and the heap the ack log holds
// per event (ids, authors and channels kept compactly, not whole events).
func BenchmarkDurabilityAudit(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("BUZZLOAD_BENCH_AUDIT_EVENTS")); err == nil && v > 0 {
		n = v
	}
	src := `run_id = "bench-audit"
[shape]
communities = 1
channels_per_community = 10
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 20
agents = 0
channels_per_member = 10
[[ramp]]
users = 1
hold_secs = 1
[verify]
sample = ` + strconv.Itoa(n) + "\n"
	sc, err := scenario.Parse("bench.toml", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	// Quotas off: the setup publishes as fast as the relay takes it.
	m := New(Options{LookupEnv: func(k string) (string, bool) {
		if k == "BUZZ_RATE_LIMIT" {
			return "false", true
		}
		return "", false
	}})
	defer m.Close()
	l := newLoaded(m, sc, scenario.Shard{})
	run, err := l.target()
	if err != nil {
		b.Fatal(err)
	}
	r := m.EmbeddedRelay()
	pool, _ := m.httpPool()
	ctx := context.Background()
	if _, err := seed.Seed(ctx, run, seed.Options{Operator: r.OperatorKeys(), OperatorOrigin: r.OperatorOrigin(), Transport: pool}); err != nil {
		b.Fatal(err)
	}
	humans := run.Clients(scenario.KindHuman, run.PeakUsers(), scenario.Shard{})
	chans := run.Channels()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var firstErr sync.Once
	per := n / len(humans)
	for _, g := range humans {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ep := run.Endpoint(0)
			c, err := relayclient.Connect(ctx, relayclient.Config{Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr},
				Keys: l.keys().Keys(g), Sink: relayclient.SinkFunc(func(res relayclient.Result) {
					if res.Outcome == relayclient.OutcomeOK {
						l.acks.Add(res.Event)
					} else if res.Op == relayclient.OpPublish {
						firstErr.Do(func() { b.Logf("publish: %s %s", res.Outcome, res.Error) })
					}
				})})
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			at := time.Now().Add(-time.Minute) // Buzz refuses timestamps far from its clock
			var done sync.WaitGroup
			for i := 0; i < per; i++ {
				ch := run.ChannelID(chans[i%len(chans)])
				ev, err := l.keys().Keys(g).NewEvent(nostr.KindStreamMessage, [][]string{{"h", ch}}, fmt.Sprintf("audit %d %d", g, i), at.Add(time.Duration(i%1000)*time.Millisecond))
				if err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
				if err := c.PublishAsync(ev, relayclient.PublishOptions{Timeout: time.Minute}, func(relayclient.Result) { done.Done() }); err != nil {
					b.Error(err)
					return
				}
			}
			done.Wait() // every OK in before the connection closes
		}(g)
	}
	wg.Wait()
	waitfor.Within(time.Minute, func() bool { return l.acks.Seen() >= int64(per*len(humans)) })
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	seen := l.acks.Seen()
	b.ResetTimer()
	var d *report.DurabilityReport
	for i := 0; i < b.N; i++ {
		d = audit.Durability(ctx, l.auditConfig(), l.acks)
	}
	b.StopTimer()
	if d.Missing != 0 || d.Checked != int(seen) || d.FoundAuthor != d.Checked || d.FoundMember != d.Checked {
		b.Fatalf("audit %+v", d)
	}
	b.ReportMetric(d.Secs, "audit_s")
	b.ReportMetric(float64(seen), "events")
	// The heap grown by publishing them, the embedded relay's store
	// included (the ack log alone holds an ackRec and the id: ~112 B).
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(max(seen, 1)), "heap_incl_relay_B/event")
	b.ReportMetric(float64(unsafe.Sizeof(struct{ id, author, channel string }{})+64), "acklog_B/event")
}
