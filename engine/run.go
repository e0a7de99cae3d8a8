package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/features"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/engine/summary"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// ErrSignal is the cancellation cause the CLI uses for SIGINT/SIGTERM
// (exit 105).
var ErrSignal = errors.New("interrupted by signal")

// errThresholdAbort is the cause when an abortOnFail threshold stops the run.
var errThresholdAbort = errors.New("thresholds crossed with abortOnFail")

// SampleBatch is the collector's batch size, and so the capacity of each
// VU's sample buffer: 64 samples (3.5 KB) keep an idle VU small while a
// busy one still aggregates in batches.
const SampleBatch = 64

// thresholdInterval is how often thresholds are judged while the run goes.
const thresholdInterval = 2 * time.Second

// Result is how a run ended.
type Result struct {
	ExitCode int
	// Err is the error that decided the exit code (nil for 0).
	Err error
	// Summary is the final metrics snapshot (nil if the run never started).
	Summary *metrics.Snapshot
	// Thresholds are the final threshold results.
	Thresholds []thresholds.Status
	// Info is what a result file (engine/result, `run --result`) records
	// besides the metrics; nil when the script never loaded.
	Info *RunInfo
	// Outputs are the counts of the outputs that keep them (output.Counter)
	// at the run's end.
	Outputs []output.Counts
}

// RunInfo describes a finished run so that `buzzload merge` can check that
// instances ran the same test and re-judge thresholds on merged data.
type RunInfo struct {
	// Options are the resolved options; MergedOptions is the consolidated
	// options JSON as test.options shows it (scenarios included).
	Options       Resolved
	MergedOptions json.RawMessage
	// Segment is this instance's execution segment and Sequence the filled
	// sequence it was striped with, both as exact fractions.
	Segment, Sequence string
	// Start and End bound the test run (setup and teardown included).
	Start, End time.Time
	// StageVerdicts are the windowed thresholds' per-stage results.
	StageVerdicts []thresholds.StageVerdict
	// SetupData is setup()'s JSON result (nil when none).
	SetupData json.RawMessage
}

// runner is one `buzzload run`.
type runner struct {
	cfg RunConfig
	log *jshost.Logger
	// features are k6 v2.1's feature flags, resolved at load (load.go).
	features features.Flags
	now      func() time.Time
	reg      *metrics.Registry
	bi       *metrics.Builtins
	coll     *metrics.Collector
	bundle   *jshost.Bundle
	opts     Resolved
	plan     *executor.Plan
	tuple    *segment.Tuple
	thr      *thresholds.Set
	ev       *thresholds.Evaluator
	outs     []output.Output
	// outNames are the --out kinds of outs (the extra outputs unnamed);
	// outCounts their counts once stopped (output.Counter).
	outNames  []string
	outCounts []output.Counts
	sched     atomic.Pointer[executor.Scheduler]
	pool      *executor.Pool

	runStart time.Time
	runEnd   time.Time
	// setupData is setup()'s JSON (or PUT /v1/setup's); setupMu guards it
	// because the REST API reads and replaces it from its own goroutine.
	// It is parsed once for every VU (jshost.SetupData; nil: none yet).
	setupMu   sync.Mutex
	setupData *jshost.SetupData
	// The REST API (cfg.Control) reads these while the run sets them.
	started   atomic.Pointer[time.Time]
	poolRef   atomic.Pointer[executor.Pool]
	evRef     atomic.Pointer[thresholds.Evaluator]
	bundleRef atomic.Pointer[jshost.Bundle]
	tainted   atomic.Bool
	merged    json.RawMessage // consolidated options, for RunInfo
	testWide  metrics.TagSet
	// stageNames are each ramping scenario's stage names, for the named
	// runs that form one threshold window.
	stageNames map[string][]string

	// cancelRun stops the execution (abort, abortOnFail, signal).
	cancelRun context.CancelCauseFunc

	mu        sync.Mutex
	firstErr  error
	outputErr error // an output that could not be written (failOutput)
	code      int
	// endThresholds: the first error is the final threshold check.
	endThresholds bool
	failed        atomic.Bool
}

// Run runs the script end to end and returns the exit code k6 would.
func Run(ctx context.Context, cfg RunConfig) Result {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	r := &runner{cfg: cfg, now: cfg.Now}
	if r.now == nil {
		r.now = time.Now
	}
	level := jshost.LevelInfo
	if cfg.Verbose {
		level = jshost.LevelDebug
	}
	r.log = jshost.NewLogger(cfg.Stderr, level)
	if cfg.CloudLogs != nil {
		r.log.SetTee(cfg.CloudLogs.Add)
	}
	res := r.run(ctx)
	if res.Err != nil && res.ExitCode != ExitOK {
		var ce *configerr.Error
		switch {
		case res.ExitCode == ExitInvalidConfig && errors.As(res.Err, &ce) && strings.Contains(ce.Error(), "\n"):
			// Invalid configuration with several problems (a scenario
			// file's): one readable list, one problem a line, no stack.
			fmt.Fprintf(cfg.Stderr, "invalid configuration:\n")
			for _, line := range strings.Split(ce.Error(), "\n") {
				fmt.Fprintf(cfg.Stderr, "  %s\n", termtext.Clean(line))
			}
		case res.ExitCode == ExitInvalidConfig && errors.As(res.Err, &ce) && res.Err != error(ce):
			// One problem thrown from the script (buzz.load of a bad file):
			// its line, not the JS stack wrapped around it (issue 47 item 3).
			r.log.Log(jshost.LevelError, ce.Error())
		default:
			var to *jshost.TimeoutError
			if errors.As(res.Err, &to) {
				r.log.Log(jshost.LevelError, res.Err.Error(), "hint", to.Hint())
				break
			}
			r.log.Log(jshost.LevelError, res.Err.Error())
		}
	}
	return res
}

// fail records err with its exit code unless an earlier error already
// decided it: the first error wins (§4.5).
// failOutput records that an output (an --out, --summary-export) could not
// be written: a run whose data was lost does not exit 0, even when nothing
// else failed (issue 30 F9).
func (r *runner) failOutput(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outputErr == nil {
		r.outputErr = err
	}
}

func (r *runner) fail(code int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr == nil {
		r.firstErr, r.code = err, code
	}
}

func (r *runner) result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{ExitCode: r.code, Err: r.firstErr}
	if res.ExitCode == ExitOK && r.outputErr != nil {
		res.ExitCode, res.Err = ExitGeneric, r.outputErr
	}
	// test.fail() wins over thresholds that failed at the end (errata 7).
	if r.failed.Load() && (r.firstErr == nil || r.endThresholds) {
		res.ExitCode, res.Err = ExitMarkedAsFailed, errors.New("test marked as failed")
	}
	if r.ev != nil {
		res.Thresholds = r.ev.Statuses()
	}
	res.Outputs = r.outCounts
	return res
}

func (r *runner) run(ctx context.Context) Result {
	r.reg = metrics.NewRegistry()
	bi, err := r.reg.RegisterBuiltins()
	if err != nil {
		r.fail(ExitGeneric, err)
		return r.result()
	}
	r.bi = bi
	r.coll = metrics.NewCollector(r.reg, metrics.CollectorOptions{BatchSize: SampleBatch})
	if ctl := r.cfg.Control; ctl != nil {
		ctl.attach(r)
		defer ctl.ended()
		// GET /v1/groups lists the groups that ran and their checks.
		for _, g := range [][]string{{metrics.GroupDurationName, "group"}, {metrics.ChecksName, "group", "check"}} {
			if err := r.coll.AddGroup(g[0], g[1:]...); err != nil {
				r.fail(ExitGeneric, err)
				return r.result()
			}
		}
	}
	if r.cfg.SummaryMode != "disabled" {
		if err := summary.Register(r.coll, r.summaryOptions()); err != nil {
			r.fail(ExitGeneric, err)
			return r.result()
		}
	}
	for _, by := range r.cfg.GroupBy {
		if err := r.coll.AddGroup("", by...); err != nil {
			r.fail(ExitGeneric, err)
			return r.result()
		}
	}

	// A signal before or during init ends the run with 105 at once.
	if err := r.load(ctx); err != nil {
		if context.Cause(ctx) == ErrSignal { //nolint:errorlint // sentinel cause
			r.fail(ExitExternalAbort, ErrSignal)
		} else {
			r.fail(ExitCode(err), err)
		}
		return r.result()
	}
	// k6 keeps http_req_duration{expected_response:true} whenever the
	// expected_response system tag is on (the default): the summary data of
	// a run that made HTTP requests carries it (observed on k6 v1.8.1).
	if r.opts.SystemTags == nil || slices.Contains(r.opts.SystemTags, "expected_response") {
		if err := r.coll.Submetric(metrics.ExpectedResponseSubmetric); err != nil {
			r.fail(ExitGeneric, err)
			return r.result()
		}
	}
	for _, arg := range r.cfg.Outputs {
		env := r.cfg.ProcessEnv
		if r.features.NativeHistograms {
			// The native-histograms flag drives the remote-write output's
			// own switch, as k6 v2.2's does.
			env = maps.Clone(env)
			if env == nil {
				env = map[string]string{}
			}
			env["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] = "true"
		}
		o, err := output.New(arg, output.Params{Stdout: r.cfg.Stdout, Thresholds: r.thr, Env: env, SystemTags: r.opts.SystemTags,
			Warn:       func(m string) { r.log.Log(jshost.LevelWarn, m) },
			Log:        r.outputLog,
			ScriptPath: cmp.Or(r.cfg.TestName, r.cfg.Script), ScriptEnv: r.cfg.ScriptEnv, Options: r.merged,
			MaxVUs: r.plan.MaxVUs, Duration: r.plan.MaxDuration, Version: r.cfg.Version,
			CloudRun: r.cfg.CloudRun, CloudLogs: r.cfg.CloudLogs})
		if s, ok := o.(output.Stopper); ok && err == nil {
			s.SetStopRun(func(err error) { r.stopRun(ExitExternalAbort, err) })
		}
		if err == nil {
			err = o.Start()
		}
		if err != nil {
			r.fail(ExitInvalidConfig, configerr.New(err))
			r.stopOutputs()
			return r.result()
		}
		r.outs = append(r.outs, o)
		r.outNames = append(r.outNames, strings.SplitN(arg, "=", 2)[0])
		r.coll.AddConsumer(o)
	}
	for _, o := range r.cfg.ExtraOutputs {
		r.outs = append(r.outs, o)
		r.coll.AddConsumer(o)
	}

	r.printBanner()

	collCtx, stopColl := context.WithCancel(context.WithoutCancel(ctx))
	collDone := make(chan struct{})
	go func() { r.coll.Run(collCtx, 50*time.Millisecond); close(collDone) }()

	runCtx, cancelRun := context.WithCancelCause(ctx)
	r.mu.Lock()
	r.cancelRun = cancelRun
	r.mu.Unlock()
	defer cancelRun(nil)
	if r.cfg.Control != nil && r.cfg.Control.isStopped() {
		cancelRun(ErrStoppedByAPI) // stopped while the script loaded
	}

	// The pool exists before anything reads it (gauges, k6/execution).
	r.pool = executor.NewGrowablePool(r.newVU, r.tuple, r.plan.MaxVUs, r.plan.MaxVUs)
	r.poolRef.Store(r.pool)

	// vus / vus_max every second from the start of VU init.
	gaugeCtx, stopGauges := context.WithCancel(runCtx)
	var gaugeWG sync.WaitGroup
	gaugeWG.Add(1)
	go func() { defer gaugeWG.Done(); r.emitVUGauges(gaugeCtx) }()

	r.execute(ctx, runCtx)

	stopGauges()
	gaugeWG.Wait()
	r.runEnd = r.now()
	r.coll.Flush()
	if r.ev != nil {
		out := r.ev.Final()
		if len(out.Failed) > 0 {
			r.tainted.Store(true)
			var keys []string
			seen := map[string]bool{}
			for _, f := range out.Failed {
				if !seen[f.Key] {
					seen[f.Key] = true
					keys = append(keys, f.Key)
				}
			}
			r.mu.Lock()
			r.endThresholds = r.firstErr == nil
			r.mu.Unlock()
			r.fail(ExitThresholdsFailed, fmt.Errorf("thresholds on metrics '%s' have been crossed", strings.Join(keys, "', '")))
		}
	}
	stopColl()
	<-collDone
	r.stopOutputs()
	if r.cfg.OnOutputs != nil {
		r.mu.Lock()
		outs := append([]output.Counts(nil), r.outCounts...)
		r.mu.Unlock()
		r.cfg.OnOutputs(outs)
	}
	if r.cfg.OnEnd != nil {
		end := r.result()
		r.cfg.OnEnd(end.ExitCode, end.Err)
	}
	r.summarize(context.WithoutCancel(ctx))
	res := r.result()
	res.Summary = r.coll.Snapshot(r.runEnd.Sub(r.runStart))
	res.Info = r.runInfo()
	return res
}

// runInfo is the description RunInfo gives of this run.
func (r *runner) runInfo() *RunInfo {
	info := &RunInfo{Options: r.opts, MergedOptions: r.merged, Start: r.runStart, End: r.runEnd, SetupData: r.setup()}
	if r.tuple != nil {
		info.Segment, info.Sequence = r.tuple.Segment().String(), r.tuple.Sequence().String()
	}
	if r.ev != nil {
		info.StageVerdicts = r.ev.StageVerdicts()
	}
	return info
}

// printBanner writes k6's execution description to stdout (not with -q).
func (r *runner) printBanner() {
	if r.cfg.Quiet {
		return
	}
	w := r.cfg.Stdout
	out := "-"
	if len(r.cfg.Outputs) > 0 {
		names := make([]string, len(r.cfg.Outputs))
		for i, arg := range r.cfg.Outputs {
			names[i] = arg
			if i < len(r.outs) {
				if d, ok := r.outs[i].(output.Describer); ok {
					names[i] = d.Description()
				}
			}
		}
		out = strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "\n  execution: local\n     script: %s\n", r.cfg.Script)
	for _, l := range r.cfg.BannerLines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "     output: %s\n\n", out)
	for i, l := range r.plan.Banner() {
		if i == 0 {
			fmt.Fprintf(w, "  %s\n", l)
		} else {
			fmt.Fprintf(w, "           %s\n", l)
		}
	}
	fmt.Fprintln(w)
}

func (r *runner) stopOutputs() {
	var ended func(output.Ender)
	for _, o := range r.outs {
		if e, ok := o.(output.Ender); ok {
			if ended == nil {
				ended = r.tellEnding()
			}
			ended(e)
		}
	}
	for i, o := range r.outs {
		if err := o.Stop(); err != nil {
			r.log.Log(jshost.LevelError, "output: "+err.Error())
			r.failOutput(fmt.Errorf("output: %w", err))
		}
		if c, ok := o.(output.Counter); ok && i < len(r.outNames) {
			r.mu.Lock()
			r.outCounts = append(r.outCounts, output.Counts{Output: r.outNames[i], Counts: c.Counts()})
			r.mu.Unlock()
		}
	}
	r.outs = nil
}

// execute initialises the VUs, runs setup, the scenarios and teardown.
func (r *runner) execute(ctx, runCtx context.Context) {
	r.setStatus(StatusInitVUs)
	if err := r.pool.Init(runCtx, r.plan.MaxPlannedVUs, runtime.GOMAXPROCS(0)); err != nil {
		// k6 still runs handleSummary after a VU's init failed (errata 6).
		r.markStart()
		r.failFromCause(runCtx, err)
		return
	}
	r.setStatus(StatusInitDone)
	if ctl := r.cfg.Control; ctl != nil && ctl.Status().Paused {
		// --paused: VUs are initialised, setup has not run, and the clock
		// starts at the resume (docs/k6-operator.md).
		r.setStatus(StatusPausedBeforeRun)
		if err := ctl.waitResume(runCtx); err != nil {
			r.markStart()
			r.failFromCause(runCtx, err)
			return
		}
	}
	if !r.cfg.StartAt.IsZero() {
		if err := r.waitForStart(runCtx); err != nil {
			r.markStart()
			r.failFromCause(runCtx, err)
			return
		}
	}
	r.markStart()
	r.setStatus(StatusStarted)
	if r.thr != nil {
		ev, err := thresholds.NewEvaluator(r.thr, r.coll, thresholds.Options{RunStart: r.runStart, Now: r.now})
		if err != nil {
			r.fail(ExitInvalidConfig, configerr.New(err))
			return
		}
		r.ev = ev
		r.evRef.Store(ev)
	}
	stopProgress := r.startProgress(runCtx)
	defer stopProgress()

	if !r.opts.NoSetup {
		r.setStatus(StatusSetup)
		data, err := r.bundle.RunSetup(runCtx, r.opts.SetupTimeout)
		if err != nil {
			// A failed setup ends the run; teardown does not run (§1.1).
			r.failFromCause(runCtx, err)
			return
		}
		r.setSetup(data)
	}
	r.setStatus(StatusRunning)

	sched := executor.NewScheduler(r.plan, r.pool, (*observer)(r))
	r.sched.Store(sched)
	thrCtx, stopThr := context.WithCancel(runCtx)
	var thrWG sync.WaitGroup
	if r.ev != nil {
		thrWG.Add(1)
		go func() { defer thrWG.Done(); r.checkThresholds(thrCtx) }()
	}
	err := sched.Run(runCtx, r.now())
	stopThr()
	thrWG.Wait()
	if runCtx.Err() != nil {
		r.failFromCause(runCtx, nil)
	} else if err != nil {
		r.fail(ExitCode(err), err)
	}

	if !r.opts.NoTeardown {
		r.setStatus(StatusTeardown)
		// Teardown runs on the global context: also after an abort.
		if err := r.bundle.RunTeardown(context.WithoutCancel(ctx), r.opts.TeardownTimeout, r.setup()); err != nil {
			r.fail(ExitCode(err), err)
		}
	}
}

// waitForStart holds the run until cfg.StartAt (--start-at).
func (r *runner) waitForStart(ctx context.Context) error {
	wait := r.cfg.StartAt.Sub(r.now())
	if wait <= 0 {
		r.log.Log(jshost.LevelWarn, fmt.Sprintf("--start-at %s is already %s past; starting now", r.cfg.StartAt.Format(time.RFC3339Nano), (-wait).Round(time.Millisecond)))
		return nil
	}
	r.log.Log(jshost.LevelInfo, fmt.Sprintf("VUs initialised; waiting %s until %s to start", wait.Round(time.Millisecond), r.cfg.StartAt.Format(time.RFC3339Nano)))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// failFromCause records why runCtx ended (abort, abortOnFail, signal), or
// err when the context is still live.
func (r *runner) failFromCause(runCtx context.Context, err error) {
	cause := context.Cause(runCtx)
	var ab *jshost.AbortError
	switch {
	case runCtx.Err() == nil && err != nil:
		r.fail(ExitCode(err), err)
	case errors.Is(cause, ErrSignal):
		r.fail(ExitExternalAbort, ErrSignal)
	case errors.Is(cause, ErrStoppedByAPI):
		r.fail(ExitStoppedByAPI, ErrStoppedByAPI)
	case errors.Is(cause, errThresholdAbort):
		r.fail(ExitThresholdsFailed, cause)
	case errors.As(cause, &ab):
		r.fail(ExitScriptAborted, ab)
	case err != nil:
		r.fail(ExitCode(err), err)
	default:
		r.fail(ExitGeneric, cause)
	}
}

// errOutputAbort marks a run an output stopped (the cloud output with
// K6_CLOUD_STOP_ON_ERROR).
var errOutputAbort = errors.New("stopped by an output")

// outputLog writes an output's line at its level (the OpenTelemetry output
// logs as k6 does: its final export's failure is an error line).
func (r *runner) outputLog(level, msg string, fields ...string) {
	r.log.Log(jshost.ParseLevel(level, jshost.LevelWarn), msg, fields...)
}
