package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Params are what the output needs from the run besides its settings.
type Params struct {
	Config Config
	// MaxVUs and Duration describe the test run to the cloud (the plan's
	// max VUs; its end, graceful stops included). Duration 0 is a run of
	// unspecified length, which k6 refuses.
	MaxVUs   int64
	Duration time.Duration
	// Thresholds are each metric key's threshold sources, as written.
	Thresholds map[string][]string
	// SystemTags are the enabled system tags; nil means k6's defaults.
	SystemTags []string
	// Version goes into the User-Agent (k6cloud/<version>).
	Version string
	// Warn receives the output's warnings; nil writes them to stderr.
	Warn func(string)
	// Provisioned is a test run prepared by `cloud run --local-execution`:
	// push to it with its token, drain Logs and notify it at the end
	// instead of creating and finishing a run.
	Provisioned *Provisioned
	Logs        *LogPusher
}

// Stats are the output's delivery counts.
type Stats struct {
	Pushes, FailedPushes int64
	// PointsSent and PointsLost are series values (one series, one period)
	// in pushes that succeeded or failed (or queued behind a slow cloud
	// past the bound); SamplesDropped never reached a period (there was no
	// test run, or the series limit was reached).
	PointsSent, PointsLost, SamplesDropped int64
	LastError                              string
}

// maxQueuedPeriods bounds the periods waiting while a push is in flight:
// past it the oldest are dropped and counted (memory stays flat whatever
// the cloud does).
const maxQueuedPeriods = 200

// Output is the cloud output.
type Output struct {
	p      Params
	cfg    Config
	warn   func(string)
	now    func() time.Time
	client *client
	ref    string // the test run pushed to
	create bool   // this output created the run, so it finishes it

	// agg is filled by AddSamples on the collector's goroutine (about 55
	// ns a sample, no I/O) and emptied by the loop every aggregation
	// period: no sample is copied or dropped on the way.
	aggMu   sync.Mutex
	agg     *aggregator
	dropped atomic.Int64 // samples with no test run to go to

	stop, done chan struct{}
	flushQ     chan []*bucket
	flushDone  chan struct{}

	mu       sync.Mutex
	stats    Stats
	failing  bool
	refused  bool // 403 E4: the cloud asked k6 to stop sending
	started  bool
	noRun    bool // the test run could not be created
	ending   *ending
	closed   bool // guarded by aggMu: Stop took the last periods
	stopOnce sync.Once
	// stopBudget and finishBudget bound the end (Stop); tests shorten them.
	stopBudget, finishBudget, createBudget time.Duration
	stopRun                                func(error)
	ctx                                    context.Context
	cancelCtx                              context.CancelFunc
}

type ending struct {
	status     RunStatus
	thresholds map[string]map[string]bool
	reason     string // the run's error text, for a provisioned run's notify
}

// requiredTags are the system tags the cloud needs (k6 refuses to start
// without them).
var requiredTags = []string{"name", "method", "status", "error", "check", "group"}

// New checks the run can be sent to the cloud and makes the output.
func New(p Params) (*Output, error) {
	if p.Duration <= 0 {
		return nil, errors.New("tests with unspecified duration are not allowed when outputting data to k6 cloud")
	}
	if p.SystemTags != nil {
		var missing []string
		for _, t := range requiredTags {
			if !slices.Contains(p.SystemTags, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("the cloud output needs the following system tags enabled: %s", strings.Join(missing, ", "))
		}
	}
	warn := p.Warn
	if warn == nil {
		warn = func(s string) { fmt.Fprintln(os.Stderr, "WARN "+s) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	cl := &client{http: &http.Client{Timeout: p.Config.Timeout, Transport: http.DefaultTransport},
		host: p.Config.Host, token: p.Config.Token, userAgent: userAgent(p.Version),
		retryWait: 500 * time.Millisecond}
	cfg := p.Config
	if pr := p.Provisioned; pr != nil {
		cl.pushURL, cl.token, cl.bearer = pr.PushURL, pr.Token, true
		for _, d := range []struct{ dst, src *time.Duration }{{&cfg.MetricPushInterval, &pr.PushInterval},
			{&cfg.AggregationPeriod, &pr.AggregationPeriod}, {&cfg.AggregationWaitPeriod, &pr.AggregationWaitPeriod}} {
			if *d.src > 0 {
				*d.dst = *d.src
			}
		}
		if pr.PushConcurrency > 0 {
			cfg.MetricPushConcurrency = pr.PushConcurrency
		}
		cfg.TestRunDetails = pr.DetailsURL
	}
	return &Output{
		p: p, cfg: cfg, warn: warn, now: time.Now,
		client: cl,
		stop:   make(chan struct{}), done: make(chan struct{}),
		flushQ: make(chan []*bucket, 1), flushDone: make(chan struct{}),
		ctx: ctx, cancelCtx: cancel, stopBudget: stopBudget, finishBudget: finishBudget, createBudget: createBudget,
	}, nil
}

// k6Protocol is the k6 release whose cloud protocol the output speaks:
// k6 v2.2.0 sent the same create, push and finish as v1.8.1 for
// testdata/cloud/probe.js (captured 6 Dec 2026), as "k6cloud/2.2.0".
const k6Protocol = "2.2.0"

// userAgent is k6's ("k6cloud/<version>") with the k6 release whose
// requests buzzload's match, buzzload's own version after it: a cloud that
// reads k6's version from it reads the protocol's.
func userAgent(version string) string {
	return "k6cloud/" + k6Protocol + " (buzzload/" + version + ")"
}

// SetStopRun gives the output a way to stop the run, used only with
// K6_CLOUD_STOP_ON_ERROR when the cloud refuses the run's metrics.
func (o *Output) SetStopRun(f func(error)) { o.stopRun = f }

// Start creates the test run (unless one is given) and starts streaming.
// A cloud that cannot create the run costs this run's metrics, not the
// run: one warning, and the samples are counted as not sent.
func (o *Output) Start() error {
	o.started = true
	switch {
	case o.p.Provisioned != nil:
		o.ref, o.create = strconv.FormatInt(o.p.Provisioned.TestRunID, 10), true
	case o.cfg.PushRefID != "":
		o.ref = o.cfg.PushRefID
	case o.cfg.TestRunID != "":
		o.ref, o.create = o.cfg.TestRunID, true
	default:
		// A cloud that does not answer holds the start for createBudget at
		// most (not three attempts of K6_CLOUD_TIMEOUT each, as in k6).
		ctx, cancel := context.WithTimeout(o.ctx, o.createBudget)
		resp, err := o.client.createTestRun(ctx, createRequest{Name: o.cfg.Name, ProjectID: o.cfg.ProjectID,
			VUs: o.p.MaxVUs, Thresholds: o.p.Thresholds, Duration: int64(o.p.Duration / time.Second)})
		cancel()
		if err != nil {
			o.noRun = true
			o.stats.LastError = err.Error()
			o.warn(fmt.Sprintf("cloud: the test run could not be created at %s: %v; the run goes on without sending its metrics", o.cfg.Host, err))
			close(o.flushDone)
			close(o.done)
			return nil
		}
		for _, l := range resp.Logs {
			o.warn("cloud (" + l.Level + "): " + l.Message)
		}
		o.ref, o.create = resp.ReferenceID, true
		o.applyOverride(resp)
	}
	agg := newAggregator(o.cfg.AggregationPeriod, o.cfg.AggregationWaitPeriod)
	agg.warn = o.warn
	o.aggMu.Lock()
	o.agg = agg
	o.aggMu.Unlock()
	go o.flusher()
	go o.loop()
	return nil
}

func (o *Output) applyOverride(resp createResponse) {
	c := resp.Config
	if c == nil {
		return
	}
	// The aggregation periods must stay whole seconds (the protocol
	// carries them so); the push interval only positive.
	for _, d := range []struct {
		dst   *time.Duration
		src   *duration
		whole bool
	}{{&o.cfg.AggregationPeriod, c.AggregationPeriod, true}, {&o.cfg.AggregationWaitPeriod, c.AggregationWaitPeriod, true},
		{&o.cfg.MetricPushInterval, c.MetricPushInterval, false}} {
		if d.src != nil && d.src.d > 0 && (!d.whole || d.src.d == d.src.d.Truncate(time.Second)) {
			*d.dst = d.src.d
		}
	}
	if c.MetricPushConcurrency != nil && *c.MetricPushConcurrency > 0 {
		o.cfg.MetricPushConcurrency = *c.MetricPushConcurrency
	}
	if c.MaxTimeSeriesInBatch != nil && *c.MaxTimeSeriesInBatch > 0 {
		o.cfg.MaxTimeSeriesInBatch = *c.MaxTimeSeriesInBatch
	}
}

// Description is the banner's "output:" entry, as k6 prints it.
func (o *Output) Description() string {
	if o.ref == "" {
		return "cloud (no test run)"
	}
	return "cloud (" + o.cfg.ResultsURL(o.ref) + ")"
}

// TestRunID is the test run the output pushes to ("" when none).
func (o *Output) TestRunID() string { return o.ref }

// AddSamples sorts the batch into its periods and series.
func (o *Output) AddSamples(samples []metrics.Sample) {
	if len(samples) == 0 {
		return
	}
	o.aggMu.Lock()
	defer o.aggMu.Unlock()
	if o.agg == nil || o.closed {
		o.dropped.Add(int64(len(samples)))
		return
	}
	o.agg.add(samples)
}

// loop hands out the expired periods every aggregation period and queues
// them for the flusher every push interval.
func (o *Output) loop() {
	defer close(o.done)
	aggT := time.NewTicker(o.cfg.AggregationPeriod)
	pushT := time.NewTicker(o.cfg.MetricPushInterval)
	defer aggT.Stop()
	defer pushT.Stop()
	var queue []*bucket
	expired := func(all bool) []*bucket {
		o.aggMu.Lock()
		defer o.aggMu.Unlock()
		if all {
			o.closed = true
		}
		return o.agg.expired(o.now(), all)
	}
	for {
		select {
		case <-aggT.C:
			queue = append(queue, expired(false)...)
			if over := len(queue) - maxQueuedPeriods; over > 0 {
				o.lose(queue[:over])
				queue = append(queue[:0:0], queue[over:]...)
			}
		case <-pushT.C:
			if len(queue) == 0 {
				continue
			}
			select {
			case o.flushQ <- queue:
				queue = nil
			default: // a push is in flight: keep the periods for the next tick
			}
		case <-o.stop:
			o.flushQ <- append(queue, expired(true)...)
			close(o.flushQ)
			return
		}
	}
}

// lose counts periods that were never pushed.
func (o *Output) lose(bs []*bucket) {
	var n int64
	for _, b := range bs {
		n += int64(len(b.values))
	}
	o.mu.Lock()
	o.stats.PointsLost += n
	o.mu.Unlock()
}

// flusher pushes the queued periods, in batches of at most
// K6_CLOUD_MAX_TIME_SERIES_IN_BATCH series, K6_CLOUD_METRIC_PUSH_CONCURRENCY
// at a time.
func (o *Output) flusher() {
	defer close(o.flushDone)
	for q := range o.flushQ {
		sets := batches(q, int(o.cfg.MaxTimeSeriesInBatch))
		work := make(chan *metricSet)
		var wg sync.WaitGroup
		for range min(int(o.cfg.MetricPushConcurrency), len(sets)) {
			wg.Go(func() {
				for ms := range work {
					o.push(ms)
				}
			})
		}
		for _, ms := range sets {
			work <- ms
		}
		close(work)
		wg.Wait()
	}
}

func (o *Output) push(ms *metricSet) {
	o.mu.Lock()
	refused := o.refused
	o.mu.Unlock()
	if refused {
		o.mu.Lock()
		o.stats.PointsLost += int64(ms.points)
		o.mu.Unlock()
		return
	}
	body := snappy.Encode(nil, ms.encode(o.ref, uint32(o.cfg.AggregationPeriod/time.Second))) //nolint:gosec // whole seconds, validated
	err := o.client.pushMetrics(o.ctx, o.ref, body)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Pushes++
	if err == nil {
		o.stats.PointsSent += int64(ms.points)
		if o.failing {
			o.failing = false
			o.warn("cloud: pushing metrics works again")
		}
		return
	}
	o.stats.FailedPushes++
	o.stats.PointsLost += int64(ms.points)
	o.stats.LastError = err.Error()
	if !o.failing {
		o.failing = true
		o.warn(fmt.Sprintf("cloud: failed to push metrics to the cloud: %v; the run goes on, losses are counted", err))
	}
	// The cloud's "stop sending" (403, error code 4): k6 stops pushing and,
	// with K6_CLOUD_STOP_ON_ERROR, stops the run.
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusForbidden && ae.Code == 4 && !o.refused {
		o.refused = true
		o.warn("cloud: Interrupt sending metrics to cloud due to an error")
		if o.cfg.StopOnError && o.stopRun != nil {
			go o.stopRun(fmt.Errorf("the cloud refused the run's metrics: %w", err))
		}
	}
}

// RunEnded tells the output how the run ended, before Stop: the exit code,
// whether an abortOnFail threshold stopped it, and each threshold's result
// (metric key → source → crossed).
func (o *Output) RunEnded(exitCode int, thresholdAborted bool, thresholds map[string]map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	reason := ""
	if o.ending != nil {
		reason = o.ending.reason
	}
	o.ending = &ending{status: StatusOf(exitCode, thresholdAborted), thresholds: thresholds, reason: reason}
}

// StatusOf is the cloud's run status for a run's exit code, as k6 v1.8.1
// maps its abort reasons (observed: abortOnFail 8, exec.test.abort() 5, a
// throwing setup() 7, exec.test.fail() 6 — its error has no abort reason).
func StatusOf(exitCode int, thresholdAborted bool) RunStatus {
	switch exitCode {
	case 0:
		return RunFinished
	case 99:
		if thresholdAborted {
			return RunAbortedThreshold
		}
		return RunFinished
	case 103, 105, 108: // REST API stop, signal, exec.test.abort()
		return RunAbortedUser
	case 107:
		return RunAbortedScriptError
	case 100, 101, 102:
		return RunAbortedLimit
	}
	return RunAbortedSystem
}

// Stop pushes what is left, finishes the test run it created and reports
// losses. It returns no error for the cloud's failures: they cost the
// cloud's copy of the results, not the run.
func (o *Output) Stop() error {
	if !o.started {
		return nil
	}
	o.stopOnce.Do(func() {
		// The last pushes get stopBudget, the finish call finishBudget: a
		// cloud that does not answer (a black-holed host, each request's
		// K6_CLOUD_TIMEOUT of a minute, three attempts) must not hold the
		// run's end for minutes. What is cut is counted.
		cut := time.AfterFunc(o.stopBudget, o.cancelCtx)
		close(o.stop)
		<-o.done
		<-o.flushDone
		cut.Stop()
		o.finish()
		o.report()
		o.cancelCtx()
	})
	return nil
}

// The end's bounds (see Stop).
const (
	stopBudget   = 20 * time.Second
	finishBudget = 10 * time.Second
	createBudget = 30 * time.Second
)

func (o *Output) finish() {
	if o.noRun || !o.create {
		return
	}
	o.mu.Lock()
	e := o.ending
	o.mu.Unlock()
	if e == nil {
		e = &ending{status: RunAbortedSystem}
	}
	if o.p.Provisioned != nil {
		o.notify(e)
		return
	}
	req := finishRequest{RunStatus: e.status, Thresholds: e.thresholds}
	if req.Thresholds == nil {
		req.Thresholds = map[string]map[string]bool{}
	}
	for _, byExpr := range req.Thresholds {
		for _, crossed := range byExpr {
			if crossed {
				req.ResultStatus = 1
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.finishBudget)
	defer cancel()
	if err := o.client.finishTestRun(ctx, o.ref, req); err != nil {
		o.warn(fmt.Sprintf("cloud: failed to send test finished to the cloud: %v", err))
	}
}

// notify ends a provisioned run: its last log lines first (the cloud
// refuses logs of a completed run), then the notify with k6's error code
// for how the run ended (provisioning/notify.go of k6 v2.2.0).
func (o *Output) notify(e *ending) {
	ctx, cancel := context.WithTimeout(context.Background(), o.finishBudget)
	defer cancel()
	if dropped, err := o.p.Logs.Drain(ctx); dropped > 0 {
		o.warn(fmt.Sprintf("cloud: %d log lines were not sent to the cloud (last error: %v)", dropped, err))
	}
	code, failed := notifyCode(e.status)
	reason := e.reason
	if failed && reason == "" {
		reason = fmt.Sprintf("the run ended with run status %d", e.status)
	}
	if err := o.p.Provisioned.Notify(ctx, code, reason, failed); err != nil {
		o.warn(fmt.Sprintf("cloud: failed to send test finished to the cloud: %v", err))
	}
}

// notifyCode is k6's notify error code for a run status: none for a run
// that ended by itself (its thresholds crossed or not).
func notifyCode(s RunStatus) (code int32, failed bool) {
	switch s {
	case RunFinished:
		return 0, false
	case RunAbortedUser, RunAbortedThreshold:
		return 8036, true
	case RunAbortedScriptError:
		return 8035, true
	case RunAbortedLimit:
		return 8034, true
	}
	return 0, true
}

// RunError is the error that ended the run (nil: it ended by itself); a
// provisioned run's notify carries its text as the reason, as k6's does.
func (o *Output) RunError(err error) {
	if err == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ending == nil {
		o.ending = &ending{status: RunAbortedSystem}
	}
	o.ending.reason = err.Error()
}

func (o *Output) report() {
	st := o.Stats()
	nothing := st.PointsSent == 0 // said even when nothing was lost: a check must see it (issue 43 L6)
	if !nothing && st.FailedPushes == 0 && st.PointsLost == 0 && st.SamplesDropped == 0 {
		return
	}
	msg := "cloud: "
	if nothing {
		msg += "no metrics reached the cloud: "
	}
	msg += fmt.Sprintf("%d of %d pushes failed; %d series values not sent", st.FailedPushes, st.Pushes, st.PointsLost)
	if st.SamplesDropped > 0 {
		msg += fmt.Sprintf(", %d samples dropped", st.SamplesDropped)
	}
	if st.LastError != "" {
		msg += "; last error: " + st.LastError
	}
	o.warn(msg)
}

// Counts are the delivery counts for the result file and the Buzz report's
// outputs check (output.Counter): a cloud that received nothing must be
// visible to a check, not only as a line on stderr (issue 43 L6).
func (o *Output) Counts() map[string]int64 {
	s := o.Stats()
	return map[string]int64{"pushes": s.Pushes, "failed_pushes": s.FailedPushes, "points_sent": s.PointsSent,
		"points_lost": s.PointsLost, "samples_dropped": s.SamplesDropped}
}

// Stats returns the delivery counts so far.
func (o *Output) Stats() Stats {
	o.mu.Lock()
	st := o.stats
	o.mu.Unlock()
	st.SamplesDropped += o.dropped.Load()
	o.aggMu.Lock()
	if o.agg != nil {
		st.SamplesDropped += o.agg.dropped
	}
	o.aggMu.Unlock()
	return st
}
