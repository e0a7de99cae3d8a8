package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mstoykov/envconfig"
	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/archive"
	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/features"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/k6http"
	"github.com/buzzload/buzzload/engine/output"
	"github.com/buzzload/buzzload/engine/output/cloud"
	"github.com/buzzload/buzzload/engine/output/webdashboard"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/js"
	"github.com/buzzload/buzzload/modules/report"
)

// runEnv is the K6_* environment of `buzzload run` (docs/k6-compat.md §8.1). Only
// real OS variables count; `-e K6_VUS=…` does not set options.
type runEnv struct {
	VUs                  *int64  `envconfig:"K6_VUS"`
	Duration             *string `envconfig:"K6_DURATION"`
	Iterations           *int64  `envconfig:"K6_ITERATIONS"`
	Stages               *string `envconfig:"K6_STAGES"`
	IncludeSystemEnvVars *bool   `envconfig:"K6_INCLUDE_SYSTEM_ENV_VARS"`
	Out                  *string `envconfig:"K6_OUT"`
	SummaryExport        *string `envconfig:"K6_SUMMARY_EXPORT"`
	SummaryMode          *string `envconfig:"K6_SUMMARY_MODE"`
	SummaryTrendStats    *string `envconfig:"K6_SUMMARY_TREND_STATS"`
	SummaryTimeUnit      *string `envconfig:"K6_SUMMARY_TIME_UNIT"`
	NoThresholds         *bool   `envconfig:"K6_NO_THRESHOLDS"`
	Tags                 *string `envconfig:"K6_TAGS"`
	SystemTags           *string `envconfig:"K6_SYSTEM_TAGS"`
	NoSetup              *bool   `envconfig:"K6_NO_SETUP"`
	NoTeardown           *bool   `envconfig:"K6_NO_TEARDOWN"`
	SetupTimeout         *string `envconfig:"K6_SETUP_TIMEOUT"`
	TeardownTimeout      *string `envconfig:"K6_TEARDOWN_TIMEOUT"`
	Throw                *bool   `envconfig:"K6_THROW"`
	Config               *string `envconfig:"K6_CONFIG"`
	// Result is --result's variable: a TestRun's arguments are the same on
	// every runner, its runner.env can name the file ({instance_id}).
	Result *string `envconfig:"BUZZLOAD_RESULT"`
}

// runFlags are the parsed command-line flags.
type runFlags struct {
	features []string // --features (k6 v2.1)
	fs       *pflag.FlagSet
	// dash is the web dashboard's settings (takeDashboard), nil without one.
	dash *webdashboard.Config

	vus, iterations                                    int64
	duration                                           time.Duration
	stages, env, outs, tags                            []string
	summaryExport, summaryMode, trendStats, timeUnit   string
	segment, sequence, systemTags, config, startAt     string
	result                                             string
	noThresholds, quiet, verbose                       bool
	noSetup, noTeardown, includeSystemEnv, throw, help bool
	http                                               httpFlags
	buzz                                               buzzFlags
	api                                                apiFlags
}

func newRunFlags(stderr io.Writer) *runFlags {
	f := &runFlags{fs: pflag.NewFlagSet("run", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.SetInterspersed(true)
	fs.Int64VarP(&f.vus, "vus", "u", 1, "number of virtual users")
	fs.DurationVarP(&f.duration, "duration", "d", 0, "test duration (e.g. 30s); of a scenario .toml, its length: the ramp cut there or its last hold lengthened")
	fs.Int64VarP(&f.iterations, "iterations", "i", 0, "total iterations, shared by the VUs")
	fs.StringArrayVarP(&f.stages, "stage", "s", nil, "ramping stage duration:target (repeatable)")
	fs.StringArrayVarP(&f.env, "env", "e", nil, "script environment variable KEY=VALUE (repeatable)")
	fs.StringArrayVarP(&f.outs, "out", "o", nil, "output type[=arg] (repeatable): json=file, csv=file, experimental-prometheus-rw (K6_PROMETHEUS_RW_*), web-dashboard (K6_WEB_DASHBOARD_*), cloud[=name] (K6_CLOUD_*)")
	fs.StringVar(&f.summaryExport, "summary-export", "", "write the end-of-test summary JSON to this file")
	fs.StringVar(&f.summaryMode, "summary-mode", "", "summary mode: compact, full or disabled")
	fs.StringArrayVar(&f.features, "features", nil, "enable feature flags (comma-separated; `buzzload features` lists them)")
	fs.StringVar(&f.trendStats, "summary-trend-stats", "", "trend stats in the summary, e.g. avg,min,med,max,p(90),p(95)")
	fs.StringVar(&f.timeUnit, "summary-time-unit", "", "fixed time unit in the summary: s, ms or us")
	fs.BoolVar(&f.noThresholds, "no-thresholds", false, "do not evaluate thresholds")
	fs.StringArrayVar(&f.tags, "tag", nil, "test-wide tag NAME=VALUE (repeatable)")
	fs.StringVar(&f.systemTags, "system-tags", "", "system tags to enable, comma-separated")
	fs.StringVar(&f.segment, "execution-segment", "", "this instance's execution segment, e.g. 1/3:2/3")
	fs.StringVar(&f.sequence, "execution-segment-sequence", "", "the full segment sequence, e.g. 0,1/3,2/3,1")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress output")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "debug logging")
	fs.BoolVar(&f.noSetup, "no-setup", false, "do not run setup()")
	fs.BoolVar(&f.noTeardown, "no-teardown", false, "do not run teardown()")
	fs.BoolVar(&f.includeSystemEnv, "include-system-env-vars", true, "pass the system environment to the script's __ENV")
	fs.BoolVarP(&f.throw, "throw", "w", false, "throw on metric errors instead of warning")
	fs.StringVarP(&f.config, "config", "c", "", "JSON config file")
	fs.StringVar(&f.result, "result", "", "write this instance's result file (metrics, thresholds, segment) at the end, for buzzload merge and compare; {instance_id} in it is the instance's id [BUZZLOAD_RESULT]")
	fs.StringVar(&f.startAt, "start-at", "", "after VU init, wait until this time (RFC 3339 or Unix seconds) to start, so distributed instances start together")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	f.http.register(fs)
	addBuzzFlags(fs, &f.buzz)
	f.api.register(fs)
	registerProfileFlags(fs)
	return f
}

// runCmd is `buzzload run script.js`.
func runCmd(ctx context.Context, args []string, env cliEnv) int {
	return runCmdWith(ctx, args, env, runHooks{})
}

// runHooks are what `cloud run --local-execution` adds to a run: the test
// run it provisioned and its log stream.
type runHooks struct {
	cloudRun  *cloud.Provisioned
	cloudLogs *cloud.LogPusher
}

func runCmdWith(ctx context.Context, args []string, env cliEnv, hooks runHooks) int {
	stdout, stderr := env.Stdout, env.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	f := newRunFlags(stderr)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return engine.ExitGeneric
	}
	if f.help {
		fmt.Fprint(stdout, runUsage+"\n")
		f.fs.SetOutput(stdout)
		f.fs.PrintDefaults()
		fmt.Fprint(stdout, runExitCodes)
		return 0
	}
	if f.fs.NArg() != 1 {
		fmt.Fprintln(stderr, "buzzload run: want exactly one script argument (see buzzload run --help)")
		return engine.ExitGeneric
	}
	stopProfiles, err := startProfiles(profilePaths(f.fs, env.Env))
	if err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return engine.ExitGeneric
	}
	defer func() {
		if err := stopProfiles(); err != nil {
			fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		}
	}()
	cfg, err := buildRunConfig(f, f.fs.Arg(0), env)
	if err == nil {
		err = checkOutputs(f, cfg)
	}
	cfg.CloudRun, cfg.CloudLogs = hooks.cloudRun, hooks.cloudLogs
	if err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return engine.ExitCode(err)
	}
	ctl, linger, stopAPI, err := startAPI(f.api, f.fs, env.Env, stderr)
	if err != nil {
		return logError(stderr, err, engine.ExitCode(err))
	}
	defer stopAPI()
	cfg.Control = ctl
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	console := engine.NewConsole(stdout) // report windows land above the progress block
	bopts, err := f.buzz.moduleOptions(f.fs, console, func(err error) { cancel(err) })
	if err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return engine.ExitCode(err)
	}
	// The relay's readings as live metrics go where they are looked at
	// (outputs, the web dashboard, a result file), and not into a bare
	// run's end-of-test summary (issue 45; the first `make run` stays
	// within 100 lines).
	bopts.LiveRelayMetrics = len(cfg.Outputs) > 0 || f.dash != nil || f.result != "" || len(bopts.RelayMetrics) > 0
	if f.result != "" {
		// The delivery ledger's journal goes beside the result file, for
		// merge to join the runners' ledgers (modules/ledger journal.go).
		bopts.LedgerJournalDir = journalDir(f.result)
	}
	reg, buzz, closeModules, err := newModuleRegistry(env.Env, env.Lookup, bopts)
	if err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return engine.ExitGeneric
	}
	defer func() {
		if err := closeModules(); err != nil {
			fmt.Fprintf(stderr, "buzzload run: closing modules: %s\n", termtext.Lines(err.Error()))
		}
	}()
	cfg.Registry = reg
	if h := grafanaHint(cfg.Outputs, env.Env); h != "" {
		fmt.Fprintf(stderr, "buzzload run: %s\n", h)
	}
	var dash *webdashboard.Dashboard
	if f.dash != nil {
		dash = webdashboard.New(*f.dash, f.fs.Arg(0), func(m string) { fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(m)) }, dashboardView)
		if err := dash.Start(); err != nil {
			fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
			return engine.ExitInvalidConfig
		}
		cfg.ExtraOutputs = append(cfg.ExtraOutputs, dash)
		if u := dash.URL(); u != "" {
			cfg.BannerLines = append(cfg.BannerLines, "web dashboard: "+u)
		}
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.StdoutTTY, cfg.StderrTTY = isTerminal(stdout), isTerminal(stderr)
	cfg.Console = console
	cfg.OnEnd = buzz.NoteRunEnd
	cfg.OnOutputs = func(cs []output.Counts) {
		ds := make([]report.OutputDelivery, len(cs))
		for i, c := range cs {
			ds[i] = report.OutputDelivery{Output: c.Output, Counts: c.Counts}
		}
		buzz.NoteOutputs(ds)
	}

	finished := make(chan struct{})
	defer close(finished)
	ended := make(chan struct{}) // closed when the test has run: only files are left to write
	if env.Signals != nil {
		go stopOnSignals(env.Signals, cancel, ended, finished, stderr)
	}
	res := engine.Run(runCtx, cfg)
	close(ended)
	if dash != nil {
		if err := finishDashboard(dash, buzz.LastReport(), stderr); err != nil && res.ExitCode == engine.ExitOK {
			res.ExitCode = engine.ExitGeneric
		}
	}
	if linger {
		lingerAfter(runCtx, ctl, stderr)
	}
	if f.buzz.reportHTML != "" {
		if err := writeRunHTML(f.buzz.reportHTML, f.fs.Arg(0), buzz.LastReport()); err != nil {
			fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
			if res.ExitCode == engine.ExitOK {
				res.ExitCode = engine.ExitGeneric
			}
		}
	}
	if f.result != "" {
		// Written also when thresholds failed: merge judges them again.
		journal, jerr := buzz.TakeLedgerJournal()
		if jerr != nil {
			fmt.Fprintf(stderr, "buzzload run: %s (merge will not join this runner's ledger)\n", termtext.Lines(jerr.Error()))
		}
		if err := writeRunResult(f.result, cfg, res, buzz.LastReport(), journal); err != nil {
			fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
			if res.ExitCode == engine.ExitOK {
				return finishBuzz(buzz, engine.ExitGeneric, stderr)
			}
		}
	}
	return finishBuzz(buzz, res.ExitCode, stderr)
}

// lookupFrom makes an envconfig lookup over a KEY=VALUE list.
func lookupFrom(environ []string) func(string) (string, bool) {
	m := envMap(environ)
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// envMap is a KEY=VALUE list as a map.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func optErr(format string, a ...any) error {
	return configerr.New(fmt.Errorf(format, a...))
}

// buildRunConfig merges flags and K6_* variables into a RunConfig; flags win
// over their variables.
func buildRunConfig(f *runFlags, script string, env cliEnv) (engine.RunConfig, error) {
	var e runEnv
	if err := envconfig.Process("", &e, lookupFrom(env.Env)); err != nil {
		return engine.RunConfig{}, optErr("environment: %w", err)
	}
	changed := f.fs.Changed
	cfg := engine.RunConfig{Script: script, Version: version}

	// Execution options: env layer and CLI layer.
	var envDur *time.Duration
	if e.Duration != nil {
		d, err := engine.ParseDuration(*e.Duration)
		if err != nil {
			return cfg, optErr("K6_DURATION: %w", err)
		}
		envDur = &d
	}
	cfg.Env.Exec = executor.ExecutionOptions{VUs: e.VUs, Duration: envDur, Iterations: e.Iterations}
	if e.Stages != nil {
		st, err := executor.ParseStagesEnv(*e.Stages)
		if err != nil {
			return cfg, optErr("%w", err)
		}
		cfg.Env.Exec.Stages = st
	}
	var vus, iters *int64
	var dur *time.Duration
	if changed("vus") {
		vus = &f.vus
	}
	if changed("iterations") {
		iters = &f.iterations
	}
	if changed("duration") {
		dur = &f.duration
	}
	if isScenarioFile(script) {
		// A scenario's length is its ramp: -d (or K6_DURATION) reshapes it
		// (Scenario.SetDuration) instead of replacing its populations'
		// scenarios by k6's default one, which has no function to run.
		if d := cmp.Or(dur, envDur); d != nil {
			if *d <= 0 {
				return cfg, optErr("--duration %v: a scenario's length must be positive", *d)
			}
			f.buzz.duration = d
		}
		dur, cfg.Env.Exec.Duration = nil, nil
	}
	ex, err := executor.CLIOptions(vus, dur, iters, f.stages)
	if err != nil {
		return cfg, optErr("%w", err)
	}
	cfg.CLI.Exec = ex

	// Other options.
	var err2 error
	cfg.Env.Options, err2 = envOptions(e)
	if err2 != nil {
		return cfg, err2
	}
	cli := engine.Options{}
	if changed("tag") {
		cli.Tags = map[string]string{}
		for _, kv := range f.tags {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return cfg, optErr("--tag %q: want NAME=VALUE with a non-empty value", kv)
			}
			cli.Tags[k] = v
		}
	}
	if changed("summary-trend-stats") {
		cli.SummaryTrendStats = splitList(f.trendStats)
	}
	if changed("summary-time-unit") {
		cli.SummaryTimeUnit = &f.timeUnit
	}
	if changed("system-tags") {
		cli.SystemTags = splitList(f.systemTags)
	}
	if changed("no-setup") {
		cli.NoSetup = &f.noSetup
	}
	if changed("no-teardown") {
		cli.NoTeardown = &f.noTeardown
	}
	if changed("throw") {
		cli.Throw = &f.throw
	}
	if changed("execution-segment") {
		cli.ExecutionSegment = &f.segment
	}
	if changed("execution-segment-sequence") {
		cli.ExecutionSegmentSequence = &f.sequence
	}
	if cfg.Env.Options.HTTP, cli.HTTP, err = f.http.layers(f.fs, env.Env); err != nil {
		return cfg, err
	}
	cfg.CLI.Options = cli

	// Runtime options: flag over env.
	pickBool := func(flag string, fv bool, ev *bool) bool {
		if changed(flag) {
			return fv
		}
		if ev != nil {
			return *ev
		}
		return fv
	}
	pickStr := func(flag, fv string, ev *string) string {
		if changed(flag) || ev == nil {
			return fv
		}
		return *ev
	}
	cfg.NoThresholds = pickBool("no-thresholds", f.noThresholds, e.NoThresholds)
	cfg.SummaryExport = pickStr("summary-export", f.summaryExport, e.SummaryExport)
	cfg.SummaryMode = pickStr("summary-mode", f.summaryMode, e.SummaryMode)
	cfg.Features = features.Source{Values: f.features, Supplied: changed("features")}
	// k6 v2.0 removed --no-summary (an unknown flag now; K6_NO_SUMMARY is
	// ignored) and the legacy layout: k6 v2.2.0 answers any other mode
	// "invalid summary mode", exit 255 (observed), as this does.
	switch cfg.SummaryMode {
	case "":
		cfg.SummaryMode = "compact"
	case "compact", "full", "disabled":
	default:
		return cfg, fmt.Errorf("invalid summary mode %q (--summary-mode, K6_SUMMARY_MODE): want compact, full or disabled (legacy was removed in k6 v2.0)", cfg.SummaryMode)
	}
	cfg.Outputs = f.outs
	if !changed("out") && e.Out != nil {
		cfg.Outputs = splitList(*e.Out)
	}
	if cfg.Outputs, f.dash, err = takeDashboard(cfg.Outputs, env.Env); err != nil {
		return cfg, err
	}
	cfg.Quiet, cfg.Verbose = f.quiet, f.verbose
	if !changed("result") && e.Result != nil {
		f.result = *e.Result
	}
	if f.result != "" {
		cfg.GroupBy = resultGroupBy
	}
	if changed("start-at") {
		t, err := parseStartAt(f.startAt)
		if err != nil {
			return cfg, optErr("--start-at: %w", err)
		}
		cfg.StartAt = t
	}

	includeSystem := pickBool("include-system-env-vars", f.includeSystemEnv, e.IncludeSystemEnvVars)
	scriptEnv, err := engine.ScriptEnv(env.Env, includeSystem, f.env)
	if err != nil {
		return cfg, optErr("%w", err)
	}
	cfg.ScriptEnv = scriptEnv
	cfg.ProcessEnv, _ = engine.ScriptEnv(env.Env, true, nil)

	if path := pickStr("config", f.config, e.Config); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, optErr("--config: %w", err)
		}
		cfg.ConfigFile, cfg.ConfigFileName = b, filepath.Base(path)
	}

	if isScenarioFile(script) {
		cfg.Script, cfg.Source, err = scenarioScript(script)
		if err != nil {
			return cfg, err
		}
		cfg.TestName = script
	}
	if archive.IsArchive(script) {
		if err := useArchive(&cfg, script, f.env); err != nil {
			return cfg, err
		}
	}
	if script == "-" {
		src, err := io.ReadAll(env.Stdin)
		if err != nil {
			return cfg, fmt.Errorf("reading the script from stdin: %w", err)
		}
		cfg.Script, cfg.Source = "stdin.js", src
	}
	cfg.Helpers = js.FS
	return cfg, nil
}

// newModuleRegistry is every Go module a script can import: the built-ins
// and the extensions compiled into this binary. close ends what the
// extensions started (the embedded relay) once the run is over.
func newModuleRegistry(environ []string, lookup dnsresolve.LookupFunc, opts extension.Options) (reg *jsmodule.Registry, buzz *extension.Module, close func() error, err error) {
	reg = jshost.NewRegistryWith(jshost.RegistryOptions{UserAgent: k6http.DefaultUserAgent(version), Lookup: lookup})
	opts.Registry, opts.LookupEnv = reg, lookupFrom(environ)
	buzz = extension.New(opts)
	if err := reg.Register(extension.ImportPath, buzz); err != nil {
		return nil, nil, nil, err
	}
	return reg, buzz, buzz.Close, nil
}

func envOptions(e runEnv) (engine.Options, error) {
	var o engine.Options
	if e.Tags != nil {
		o.Tags = map[string]string{}
		for _, kv := range splitList(*e.Tags) {
			k, v, ok := strings.Cut(kv, ":")
			if !ok || k == "" || v == "" {
				return o, optErr("K6_TAGS item %q: want name:value", kv)
			}
			o.Tags[k] = v
		}
	}
	if e.SummaryTrendStats != nil {
		o.SummaryTrendStats = splitList(*e.SummaryTrendStats)
	}
	o.SummaryTimeUnit = e.SummaryTimeUnit
	if e.SystemTags != nil {
		o.SystemTags = splitList(*e.SystemTags)
	}
	o.NoSetup, o.NoTeardown, o.Throw = e.NoSetup, e.NoTeardown, e.Throw
	for _, d := range []struct {
		name string
		src  *string
		dst  **time.Duration
	}{{"K6_SETUP_TIMEOUT", e.SetupTimeout, &o.SetupTimeout}, {"K6_TEARDOWN_TIMEOUT", e.TeardownTimeout, &o.TeardownTimeout}} {
		if d.src == nil {
			continue
		}
		v, err := engine.ParseDuration(*d.src)
		if err != nil {
			return o, optErr("%s: %w", d.name, err)
		}
		*d.dst = &v
	}
	return o, nil
}

// parseStartAt reads an RFC 3339 time or Unix seconds (decimals allowed).
func parseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor Unix seconds", s)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
