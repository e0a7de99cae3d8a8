// Package prometheusrw is `--out experimental-prometheus-rw`: k6's
// Prometheus remote-write output (docs/k6-compat.md §7.3), configured by the same
// K6_PROMETHEUS_RW_* variables with the same defaults and writing the same
// series: k6_ prefix, counters _total, rates _rate, gauges bare, Trends one
// gauge per K6_PROMETHEUS_RW_TREND_STATS stat or one native histogram, time
// values in seconds, every non-empty tag a label.
//
// It never slows the run. AddSamples copies a batch into a bounded channel
// and returns; when the channel is full the batch is dropped and counted.
// One goroutine aggregates the batches into per-series cumulative state and,
// every push interval, encodes the series that changed; another sends it
// (snappy-compressed protobuf, one request in flight, 5 s timeout). A dead,
// slow or refusing endpoint costs pushes, which are counted: one warning when
// pushes start failing, one when they recover, and the total at Stop. The
// exit code is never changed by it (Stop returns no error for lost pushes).
package prometheusrw

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"

	"github.com/buzzload/buzzload/engine/metrics"
)

// inboxBatches bounds the samples waiting for the aggregator (batches of up
// to the collector's batch size, 512): about 256 × 512 samples, ~7 MB.
const inboxBatches = 256

// Stats are the output's delivery counts, for the final report and tests.
type Stats struct {
	Pushes, FailedPushes int64
	// PointsLost are series points in pushes that failed (the later
	// successful pushes still carried the cumulative values).
	PointsLost int64
	// SamplesDropped are samples never aggregated: the inbox was full or the
	// series limit was reached.
	SamplesDropped int64
	// SkippedIntervals are push intervals that passed while the previous
	// push was still in flight (a slow endpoint): their points were never
	// written, the next push carried the cumulative values.
	SkippedIntervals int64
	LastError        string
}

// Output is the remote-write output.
type Output struct {
	cfg    Config
	warn   func(string)
	now    func() time.Time
	client *http.Client
	agg    *aggregator

	inbox    chan *[]metrics.Sample
	overflow atomic.Int64
	pool     sync.Pool // *[]metrics.Sample, reused between AddSamples and the aggregator

	stop    chan struct{}
	done    chan struct{}
	started bool
	once    sync.Once

	sendQ   chan *request
	results chan pushResult

	// stats is written by the loop goroutine only, under statsMu so that
	// Stats may read it while the run goes on.
	statsMu sync.Mutex
	stats   Stats
	// owned by the loop goroutine
	failing bool
	slow    bool
}

type pushResult struct {
	r         *request
	err       error
	permanent bool // refused for good (4xx): do not send these points again
}

// New creates the output. warn receives the loss warnings (nil writes them
// to stderr).
func New(cfg Config, warn func(string)) (*Output, error) {
	if warn == nil {
		warn = func(s string) { fmt.Fprintln(os.Stderr, "WARN "+s) }
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipTLSVerify, MinVersion: cfg.TLSMinVersion} //nolint:gosec // the user's choice, as in k6
	if cfg.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ClientCert, cfg.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envClientCert, err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConns: 2, IdleConnTimeout: 90 * time.Second,
		Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	return &Output{
		cfg: cfg, warn: warn, now: time.Now,
		client: &http.Client{Transport: tr, Timeout: cfg.Timeout},
		agg:    newAggregator(cfg),
		inbox:  make(chan *[]metrics.Sample, inboxBatches),
		stop:   make(chan struct{}), done: make(chan struct{}),
		sendQ: make(chan *request, 1), results: make(chan pushResult, 1),
	}, nil
}

// Start starts the aggregator and the sender.
func (o *Output) Start() error {
	o.started = true
	go o.sender()
	go o.loop()
	return nil
}

// AddSamples copies the batch for the aggregator without waiting: a full
// inbox drops it (counted).
func (o *Output) AddSamples(samples []metrics.Sample) {
	if len(samples) == 0 {
		return
	}
	cp, _ := o.pool.Get().(*[]metrics.Sample)
	if cp == nil {
		cp = new([]metrics.Sample)
	}
	*cp = append((*cp)[:0], samples...)
	select {
	case o.inbox <- cp:
	default:
		o.overflow.Add(int64(len(samples)))
		o.pool.Put(cp)
	}
}

// Stop aggregates what is left, pushes it (and the stale markers when
// enabled) and reports the loss, if any. A lost push is reported, not
// returned: it must not change the run's outcome.
func (o *Output) Stop() error {
	if !o.started {
		return nil
	}
	o.once.Do(func() { close(o.stop) })
	<-o.done
	o.client.CloseIdleConnections()
	st := o.Stats()
	if st.FailedPushes > 0 || st.SamplesDropped > 0 || st.SkippedIntervals > 0 {
		o.warn(fmt.Sprintf("prometheus remote write: %d of %d pushes to %s failed (%d series points not written), %d push intervals skipped while a push was slow, %d samples dropped; last error: %s",
			st.FailedPushes, st.Pushes, redactURL(o.cfg.ServerURL), st.PointsLost, st.SkippedIntervals, st.SamplesDropped, orNone(st.LastError)))
	}
	return nil
}

// Stats returns the delivery counts so far; final after Stop.
func (o *Output) Stats() Stats {
	o.statsMu.Lock()
	defer o.statsMu.Unlock()
	return o.stats
}

// count changes the delivery counts (the loop goroutine only).
func (o *Output) count(f func(*Stats)) {
	o.statsMu.Lock()
	f(&o.stats)
	o.statsMu.Unlock()
}

// Counts are Stats for the result file (output.Counter).
func (o *Output) Counts() map[string]int64 {
	s := o.Stats()
	return map[string]int64{"pushes": s.Pushes, "failed_pushes": s.FailedPushes, "points_lost": s.PointsLost,
		"samples_dropped": s.SamplesDropped, "skipped_intervals": s.SkippedIntervals}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (o *Output) loop() {
	defer close(o.done)
	tick := time.NewTicker(o.cfg.PushInterval)
	defer tick.Stop()
	inFlight := false
	var sentAt time.Time
	for {
		select {
		case b := <-o.inbox:
			o.aggregate(b)
		case <-tick.C:
			if inFlight {
				// The endpoint is slower than the interval: this tick's
				// values go in the next push.
				o.count(func(s *Stats) { s.SkippedIntervals++ })
				if !o.slow && !o.failing {
					o.warn(fmt.Sprintf("prometheus remote write: a push to %s takes longer than the %s push interval; intervals are skipped while it lasts (the run goes on; the total is reported at the end)",
						redactURL(o.cfg.ServerURL), o.cfg.PushInterval))
				}
				o.slow = true
				continue
			}
			if r := o.agg.build(); r != nil {
				inFlight, sentAt = true, time.Now()
				o.sendQ <- r
			}
		case res := <-o.results:
			inFlight = false
			if time.Since(sentAt) < o.cfg.PushInterval {
				o.slow = false // keeps up again: a later slowness is a new episode
			}
			o.settle(res)
		case <-o.stop:
			if inFlight {
				o.settle(<-o.results)
			}
			o.drain()
			if r := o.agg.build(); r != nil {
				o.sendQ <- r
				o.settle(<-o.results)
			}
			if o.cfg.StaleMarkers && !o.failing { // no stale markers into an endpoint that just failed
				if r := o.agg.staleMarkers(o.now()); r != nil {
					o.sendQ <- r
					o.settle(<-o.results)
				}
			}
			close(o.sendQ)
			o.count(func(s *Stats) { s.SamplesDropped = o.agg.dropped + o.overflow.Load() })
			return
		}
	}
}

// drain aggregates every batch still in the inbox (the collector has
// stopped feeding it when Stop is called).
func (o *Output) drain() {
	for {
		select {
		case b := <-o.inbox:
			o.aggregate(b)
		default:
			return
		}
	}
}

// aggregate adds a batch and returns its buffer for reuse.
func (o *Output) aggregate(b *[]metrics.Sample) {
	o.agg.add(*b)
	clear(*b) // drop the references to tag sets and metrics until reuse
	o.pool.Put(b)
}

func (o *Output) settle(res pushResult) {
	o.count(func(s *Stats) { s.Pushes++ })
	if res.err == nil || res.permanent {
		o.agg.settle(res.r)
	}
	if res.err == nil {
		if o.failing {
			o.failing = false
			o.warn(fmt.Sprintf("prometheus remote write: pushes to %s work again after %d failed", redactURL(o.cfg.ServerURL), o.stats.FailedPushes))
		}
		return
	}
	o.count(func(s *Stats) {
		s.FailedPushes++
		s.PointsLost += int64(res.r.points)
		s.LastError = res.err.Error()
	})
	if !o.failing {
		o.failing = true
		o.warn(fmt.Sprintf("prometheus remote write: push failed: %v; series points are lost until it recovers (the run goes on; the total is reported at the end)", res.err))
	}
}

func (o *Output) sender() {
	for r := range o.sendQ {
		perm, err := o.push(r)
		o.results <- pushResult{r: r, err: err, permanent: perm}
	}
}

// push sends one request. A 4xx answer other than 429 is permanent: the
// same points would be refused again.
func (o *Output) push(r *request) (permanent bool, err error) {
	body := snappy.Encode(nil, r.body)
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.ServerURL, bytes.NewReader(body))
	if err != nil {
		return true, err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "buzzload")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	for k, v := range o.cfg.Headers {
		req.Header.Set(k, v)
	}
	if o.cfg.HasBasicAuth {
		req.SetBasicAuth(o.cfg.Username, o.cfg.Password)
	}
	if o.cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.BearerToken)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return false, fmt.Errorf("no answer within %s", o.cfg.Timeout)
		}
		return false, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	return resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests, err
}
