// Package output writes samples to files the way k6's outputs do:
// `--out json=FILE` (NDJSON, spec §7.1) and `--out csv=FILE` (spec §7.2),
// and resolves `--out experimental-prometheus-rw` (package prometheusrw).
//
// An Output is a metrics.SampleConsumer: register it with
// Collector.AddConsumer after Start. AddSamples only copies the batch into
// memory; a goroutine encodes and writes it every flush interval, so the
// sample path never waits on I/O. Stop writes what is left and closes the
// file.
//
//	out, err := output.New("json=results.json.gz", output.Params{Thresholds: set, Stdout: os.Stdout})
//	err = out.Start(); collector.AddConsumer(out); ...; err = out.Stop()
package output

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/cloud"
	"github.com/buzzload/buzzload/engine/output/opentelemetry"
	"github.com/buzzload/buzzload/engine/output/prometheusrw"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// Output receives samples and writes them somewhere.
type Output interface {
	// Start opens the destination and starts the periodic writer.
	Start() error
	// AddSamples copies a batch for the next write; it never blocks on I/O.
	AddSamples(samples []metrics.Sample)
	// Stop writes every pending sample and closes the destination.
	Stop() error
}

// Params are what every output may need from the runner.
type Params struct {
	// Stdout is where "-" (or an empty file name) writes.
	Stdout io.Writer
	// Thresholds are listed in the JSON Metric lines (may be nil).
	Thresholds *thresholds.Set
	// Submetrics are extra sub-metric keys to list in JSON Metric lines
	// (besides those of thresholds), e.g. http_req_duration{expected_response:true}.
	Submetrics []string
	// Location is the time zone of JSON timestamps (time.Local when nil).
	Location *time.Location
	// Env is the environment (K6_CSV_* settings); nil means none.
	Env map[string]string
	// SystemTags are the enabled system tags (CSV columns); nil means k6's
	// defaults.
	SystemTags []string
	// Warn receives an output's warnings (remote-write losses); nil writes
	// them to stderr.
	Warn func(msg string)
	// Log receives an output's lines at a level ("info", "warn", "error")
	// with key/value fields, for outputs that log as k6 does (OpenTelemetry);
	// nil falls back to Warn for every level.
	Log func(level, msg string, fields ...string)

	// What the cloud output tells the cloud of the run: the test's path (the
	// scenario file, not its generated script) and the script's environment (-e), the merged options (options.cloud), the plan's
	// max VUs and end, and the version for its User-Agent.
	ScriptPath string
	ScriptEnv  map[string]string
	Options    json.RawMessage
	MaxVUs     int64
	Duration   time.Duration
	Version    string
	// CloudRun and CloudLogs are a test run `cloud run --local-execution`
	// provisioned, and its log stream: the cloud output pushes to it.
	CloudRun  *cloud.Provisioned
	CloudLogs *cloud.LogPusher
}

// Counter is an output that counts what it delivered and what it lost
// (pushes, failed pushes, points lost, samples dropped): the result file
// lists them under "outputs", so a loss is a number a check can read, not
// a warning's wording (code review T5).
type Counter interface{ Counts() map[string]int64 }

// Counts is one output's counts at the run's end.
type Counts struct {
	Output string           `json:"output"` // the --out kind
	Counts map[string]int64 `json:"counts"`
}

// Describer is an output whose banner entry is not its --out argument
// (the cloud output names its test run's URL, as k6 prints it).
type Describer interface{ Description() string }

// Ender is an output told how the run ended before Stop: the exit code,
// whether an abortOnFail threshold stopped the run, and each threshold's
// result (metric key → source → crossed).
type Ender interface {
	RunEnded(exitCode int, thresholdAborted bool, thresholds map[string]map[string]bool)
}

// ErrorEnder is an output told the error that ended the run (nil when it
// ended by itself), after RunEnded: the cloud's notify carries its text.
type ErrorEnder interface{ RunError(err error) }

// Stopper is an output that may stop the run (the cloud output with
// K6_CLOUD_STOP_ON_ERROR).
type Stopper interface{ SetStopRun(func(error)) }

// New creates an output from a `--out` argument: `json=FILE`, `json`,
// `csv=FILE` or `csv=fileName=…,saveInterval=…,timeFormat=…`,
// `experimental-prometheus-rw`, `cloud` or `cloud=NAME`.
func New(arg string, p Params) (Output, error) {
	kind, rest, _ := strings.Cut(arg, "=")
	switch kind {
	case "json":
		return NewJSON(rest, p), nil
	case "csv":
		cfg, err := ParseCSVConfig(rest, p.Env)
		if err != nil {
			return nil, fmt.Errorf("--out %s: %w", arg, err)
		}
		return NewCSV(cfg, p), nil
	case "experimental-prometheus-rw":
		cfg, err := prometheusrw.ParseConfig(rest, p.Env)
		if err != nil {
			return nil, fmt.Errorf("--out %s: %w", arg, err)
		}
		return prometheusrw.New(cfg, p.Warn)
	case cloud.Name:
		return newCloud(arg, rest, p)
	case opentelemetry.Name, opentelemetry.ExperimentalName:
		return newOpenTelemetry(kind, p)
	}
	return nil, fmt.Errorf("--out %s: unknown output %q (have json, csv, experimental-prometheus-rw, opentelemetry, cloud)", arg, kind)
}

// newOpenTelemetry makes `--out opentelemetry` from the K6_OTEL_* settings;
// the old name works with k6's warning.
func newOpenTelemetry(kind string, p Params) (Output, error) {
	log := p.Log
	if log == nil {
		warn := p.Warn
		if warn == nil {
			warn = func(s string) { fmt.Fprintln(os.Stderr, "WARN "+s) }
		}
		log = func(_, msg string, fields ...string) {
			for i := 0; i+1 < len(fields); i += 2 {
				msg += fmt.Sprintf(" %s=%q", fields[i], fields[i+1])
			}
			warn(msg)
		}
	}
	if kind == opentelemetry.ExperimentalName {
		log("warn", opentelemetry.ExperimentalWarning)
	}
	cfg, err := opentelemetry.ParseConfig(p.Env, p.Version)
	if err != nil {
		return nil, fmt.Errorf("could not create the '%s' output: %w", kind, err)
	}
	return opentelemetry.New(cfg, opentelemetry.Log(log)), nil
}

// newCloud makes `--out cloud[=NAME]` from k6's settings.
func newCloud(arg, name string, p Params) (Output, error) {
	cfg, err := cloud.ParseConfig(cloud.Inputs{Arg: name, Env: p.Env, ScriptEnv: p.ScriptEnv, Options: p.Options, ScriptPath: p.ScriptPath})
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", arg, err)
	}
	thr := map[string][]string{}
	if p.Thresholds != nil {
		for _, t := range p.Thresholds.Thresholds {
			thr[t.Key] = append(thr[t.Key], t.Source)
		}
	}
	o, err := cloud.New(cloud.Params{Config: cfg, MaxVUs: p.MaxVUs, Duration: p.Duration, Thresholds: thr,
		SystemTags: p.SystemTags, Version: p.Version, Warn: p.Warn, Provisioned: p.CloudRun, Logs: p.CloudLogs})
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", arg, err)
	}
	return o, nil
}

// sink is an opened destination: a file, possibly gzipped, or stdout.
type sink struct {
	w      io.Writer
	closer []io.Closer
}

func openSink(name string, stdout io.Writer) (*sink, error) {
	if name == "" || name == "-" {
		if stdout == nil {
			stdout = os.Stdout
		}
		return &sink{w: stdout}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("output file %s: %w", name, err)
	}
	s := &sink{w: f, closer: []io.Closer{f}}
	if strings.HasSuffix(name, ".gz") {
		gz := gzip.NewWriter(f)
		s.w = gz
		s.closer = []io.Closer{gz, f}
	}
	return s, nil
}

func (s *sink) Close() error {
	var first error
	for _, c := range s.closer {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
