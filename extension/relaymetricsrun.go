package extension

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/report"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relaymetrics"
)

// The relay's own numbers (issue 45): its Prometheus series read from the
// module's start (or the embedded relay's) to the end of the run, beside
// the clients' counts in the report (report.RelayMetricsReport).

const kubectlMetricsNote = "read through kubectl get --raw (the API server's pod proxy), read-only, best effort: a pod replaced during the run restarts its counters (counted from zero)"

// watchRelayMetrics starts reading --relay-metrics' sources.
func (m *Module) watchRelayMetrics() {
	m.relayMetrics = relaymetrics.NewWatcher(relaymetrics.Reader{Kubectl: m.opts.Kubectl}, m.opts.RelayMetricsInterval)
	m.relayMetrics.OnReading = m.pushRelayReading
	for _, spec := range m.opts.RelayMetrics {
		src, err := relaymetrics.ParseSource(spec)
		if err != nil {
			continue // the flag's parser refused it before the run
		}
		note := ""
		if src.URL == "" {
			note = kubectlMetricsNote
		}
		m.relayMetrics.Add(src, note)
	}
}

// pushRelayReading makes a reading live metrics (the web dashboard's
// plots, every output), through the first scenario whose clients have
// started: the relay's numbers are no scenario's, so without its tag.
func (m *Module) pushRelayReading(src relaymetrics.Source, at time.Time, inc, gauges map[string]float64) {
	if !m.opts.LiveRelayMetrics {
		return
	}
	for _, l := range m.loadedScenarios() {
		push, met, tags := l.genOut.get()
		if push == nil {
			continue
		}
		tags = tags.With("source", src.Spec)
		samples := []metrics.Sample{
			{Metric: met.relayStored, Tags: tags, Time: at, Value: inc[report.SeriesStored]},
			{Metric: met.relayRejected, Tags: tags, Time: at, Value: inc[report.SeriesRejected] + inc[report.SeriesAdmission]},
		}
		if v, ok := gauges[report.SeriesConnsActive]; ok {
			samples = append(samples, metrics.Sample{Metric: met.relayConns, Tags: tags, Time: at, Value: v})
		}
		push(samples...)
		return
	}
}

// finishRelayMetrics takes the last readings, once, while the relay (the
// embedded one included) still serves.
func (m *Module) finishRelayMetrics(ls []*loaded) {
	// Publishes still in flight when the clients stopped: let the relay
	// answer or drop them before the last reading and the audits read
	// (issue 41 item 10), as long as its counters still move (≤ 10 s).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	m.relayMetrics.Settle(ctx, 250*time.Millisecond, 10*time.Second)
	cancel()
	if rep := m.relayMetrics.Finish(); rep != nil {
		m.relayMetricsRep = rep
	}
	for _, l := range ls {
		l.acked.freeze()
	}
}

// ackedKinds counts the events the relay acknowledged to the run's
// clients (the seed's included) by Buzz's kind label, for the finding
// "stored fewer than acknowledged" (report.relayMetricsChecks): Buzz
// counts buzz_events_stored_total{kind} for every accepted ingest,
// ephemeral kinds excepted. Frozen at the relay's last reading, so the
// teardown's publishes are not counted.
type ackedKinds struct {
	mu     sync.RWMutex
	m      map[int]*atomic.Int64 // by kind; labelled when frozen
	frozen atomic.Bool
	final  map[string]int64
}

func (a *ackedKinds) add(r *relayclient.Result) {
	if r.Outcome != relayclient.OutcomeOK || r.Event == nil || r.Idempotent || a.frozen.Load() {
		return
	}
	k := r.Event.Kind
	if k >= 20000 && k < 30000 {
		return // ephemeral: never stored
	}
	a.mu.RLock()
	v := a.m[k]
	a.mu.RUnlock()
	if v == nil {
		a.mu.Lock()
		if a.m == nil {
			a.m = map[int]*atomic.Int64{}
		}
		if v = a.m[k]; v == nil {
			v = new(atomic.Int64)
			a.m[k] = v
		}
		a.mu.Unlock()
	}
	v.Add(1)
}

// freeze takes the counts by Buzz's kind label (once; later adds are
// ignored).
func (a *ackedKinds) freeze() {
	if a.frozen.Swap(true) {
		return
	}
	a.final = map[string]int64{}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k, v := range a.m {
		a.final[relay.KindLabel(k)] += v.Load()
	}
}
