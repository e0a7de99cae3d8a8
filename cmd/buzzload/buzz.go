package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/internal/sysmem"
	"github.com/buzzload/buzzload/modules/logscan"
	"github.com/buzzload/buzzload/modules/relaymetrics"
)

// ExitUnreachable is the exit code of a run whose preflight failed: the
// target's NIP-11, WebSocket (connect and AUTH) or operator API did not
// answer before any seeding or traffic, so CI tells "relay down" from
// "relay too slow" (99). docs/guide.md "Exit codes".
const ExitUnreachable = 111

// ExitRelayEvidence is the exit code of a run the relay's own evidence
// failed, when nothing else did: the durability audit found acknowledged
// events missing, the relay's log has error lines, or the post-run sweep
// found it no longer serving. docs/guide.md "Exit codes".
const ExitRelayEvidence = 112

// buzzFlags are the Buzz options of `buzzload run` (buzz-loadgen's
// --shard and --report, and the long-run options of issue 13).
type buzzFlags struct {
	shard          string
	report         string
	reportHTML     string
	reportInterval time.Duration
	warmup         time.Duration
	// duration is -d / K6_DURATION of a scenario .toml: its length, not
	// k6's replacement of the scenarios (buildRunConfig moves it here).
	duration       *time.Duration
	relayLogs      []string
	relayMets      []string
	relayMetsEvery time.Duration
	logScope       string
	logPattern     string
	logAllow       []string
	logMax         int
}

func addBuzzFlags(fs *pflag.FlagSet, b *buzzFlags) {
	fs.StringVar(&b.shard, "shard", "", "run shard i of n of every scenario's clients, e.g. 0/4 (buzz-loadgen's --shard; each kind dealt evenly over the shards)")
	fs.StringVar(&b.report, "report", "", "write the Buzz report's JSON to this file (a report that cannot be written fails the run)")
	fs.StringVar(&b.reportHTML, "report-html", "", "write the Buzz report as one self-contained HTML page with plots (buzzload report)")
	fs.DurationVar(&b.reportInterval, "report-interval", 0, "print a window of per-operation numbers this often while the run goes (default 10s for runs under 10m, 60s above, printed for runs of 2m or more; 0s prints none)")
	fs.StringArrayVar(&b.relayLogs, "relay-log", nil, "scan this relay log FILE for error lines: position taken at the start, what it gains scanned at the end (rotation and truncation followed); or kubectl:NAMESPACE/SELECTOR, read at the end with kubectl logs --since-time (best effort); repeatable. The embedded relay's own log is always scanned")
	fs.StringArrayVar(&b.relayMets, "relay-metrics", nil, "read the relay's Prometheus series from this URL (its /metrics) or kubectl:NAMESPACE/SELECTOR:PORT (every matching pod through the API server's proxy; read-only, best effort) at the start, every 15s and at the end, and report Buzz's series beside the clients' counts; repeatable. The embedded relay's own are always read")
	fs.DurationVar(&b.relayMetsEvery, "relay-metrics-interval", 15*time.Second, "how often the relay's series are read between the first and the last reading")
	fs.StringVar(&b.logScope, "relay-log-scope", "all", "which relay log lines count: all, or run (only lines naming this run's community hosts or channels: another tenant's errors on a shared relay do not count)")
	fs.StringVar(&b.logPattern, "relay-log-pattern", logscan.DefaultPattern, "regular expression of an error line in the relay's logs (default: Buzz's ERROR level, text or JSON)")
	fs.StringArrayVar(&b.logAllow, "relay-log-allow", nil, "regular expression of error lines that do not count (repeatable)")
	fs.IntVar(&b.logMax, "relay-log-max", 0, "error lines the relay's logs may have before the run fails")
	fs.DurationVar(&b.warmup, "warmup", 0, "report what settles in the first DURATION of the run apart and do not judge it (replaces [abort] warmup_secs)")
}

const runUsage = `usage: buzzload run [flags] script.js
       buzzload run [flags] scenario.toml

A .js file is a k6 script. A .toml file is a Buzz scenario (docs/scenario.md)
run with the standard script built in: the shape of scenarios/local-smoke.js,
which seeds in setup, runs one ramping-vus scenario per population of the
file's [[ramp]] and prints the Buzz report (its JSON only with --report).
`

// runExitCodes ends run --help (k6's codes, docs/k6-compat.md §4.5, and
// buzzload's own, docs/guide.md).
const runExitCodes = `
exit codes:
  0    the run passed          99   a threshold or a step's [abort] limits failed
  100  setup timed out         101  teardown timed out     102  handleSummary timed out
  103  stopped by the REST API 104  invalid configuration  105  interrupted by a signal
  106  the REST API could not listen                      107  a script exception
  108  test.abort()            109  a Go panic             110  test.fail()
  111  the relay is unreachable (the preflight)           112  the relay's own evidence failed the run
  255  any other error
`

// moduleOptions turns the Buzz flags into the module's options.
func (b *buzzFlags) moduleOptions(fs *pflag.FlagSet, stdout io.Writer, abort func(error)) (extension.Options, error) {
	o := extension.Options{ReportPath: b.report, Console: stdout, Abort: abort, MemoryAvailable: sysmem.Available, Version: version}
	if b.shard != "" {
		sh, err := extension.ParseShard(b.shard)
		if err != nil {
			return o, optErr("--shard: %w", err)
		}
		o.Shard = sh
	}
	if fs.Changed("report-interval") {
		if b.reportInterval < 0 {
			return o, optErr("--report-interval %v: want a duration of 0 or more", b.reportInterval)
		}
		o.ReportInterval = b.reportInterval
		if b.reportInterval == 0 {
			o.ReportInterval = -1 // none printed
		}
	}
	pat, err := regexp.Compile(b.logPattern)
	if err != nil {
		return o, optErr("--relay-log-pattern %q: %w", b.logPattern, err)
	}
	o.RelayLogRules = logscan.Rules{Pattern: pat, Max: b.logMax}
	for _, a := range b.logAllow {
		re, err := regexp.Compile(a)
		if err != nil {
			return o, optErr("--relay-log-allow %q: %w", a, err)
		}
		o.RelayLogRules.Allow = append(o.RelayLogRules.Allow, re)
	}
	if b.logMax < 0 {
		return o, optErr("--relay-log-max %d: want 0 or more", b.logMax)
	}
	for _, p := range b.relayLogs {
		if strings.HasPrefix(p, logscan.KubectlPrefix) {
			if _, err := logscan.ParseKubectl(p); err != nil {
				return o, optErr("--relay-log: %w", err)
			}
			continue
		}
		if err := logscan.Readable(p); err != nil {
			return o, optErr("--relay-log %s: %w", p, err)
		}
	}
	for _, p := range b.relayMets {
		if _, err := relaymetrics.ParseSource(p); err != nil {
			return o, optErr("--relay-metrics: %w", err)
		}
	}
	o.RelayMetrics = b.relayMets
	if b.relayMetsEvery <= 0 {
		return o, optErr("--relay-metrics-interval %v: want a positive duration", b.relayMetsEvery)
	}
	o.RelayMetricsInterval = b.relayMetsEvery
	switch b.logScope {
	case "all":
	case "run":
		o.RelayLogRules.RunScope = true
	default:
		return o, optErr("--relay-log-scope %q: want all or run", b.logScope)
	}
	o.Duration = b.duration
	o.Kubectl = os.Getenv("BUZZLOAD_KUBECTL")
	o.RelayLogs = b.relayLogs
	if fs.Changed("warmup") {
		if b.warmup < 0 {
			return o, optErr("--warmup %v: want a duration of 0 or more", b.warmup)
		}
		w := b.warmup
		o.Warmup = &w
	}
	return o, nil
}

// scenarioScript is the script of `buzzload run scenario.toml`: the standard
// script, placed beside the file so buzz.load finds it (and errors name
// <file>.toml.js).
func scenarioScript(path string) (script string, src []byte, err error) {
	if _, err := os.Stat(path); err != nil {
		return "", nil, fmt.Errorf("scenario file: %w", err)
	}
	return path + ".js", extension.StandardScript("./" + filepath.Base(path)), nil
}

func isScenarioFile(arg string) bool { return strings.HasSuffix(strings.ToLower(arg), ".toml") }

// finishBuzz settles what the Buzz module owes once the run is over: the
// report file (--report), and the exit code of a failed preflight.
func finishBuzz(buzz *extension.Module, code int, stderr io.Writer) int {
	if err := buzz.PreflightError(); err != nil {
		why := "the target is unreachable"
		if strings.Contains(err.Error(), "relay membership") {
			why = "the target refuses the run's identities"
		}
		fmt.Fprintf(stderr, "buzzload run: %v\nbuzzload run: stopped before any load: %s (exit %d)\n", err, why, ExitUnreachable)
		code = ExitUnreachable
	}
	if rep := buzz.LastReport(); rep != nil && !rep.OK && code == engine.ExitOK {
		// The clients' own verdict (drift) is 99 as the [abort] limits are;
		// the rest is the relay's evidence.
		c := ExitRelayEvidence
		if strings.HasPrefix(rep.AbortReason, "drift: ") {
			c = engine.ExitThresholdsFailed
		}
		fmt.Fprintf(stderr, "buzzload run: %s (exit %d)\n", termtext.Lines(rep.AbortReason), c)
		code = c
	}
	if err := buzz.FinishReports(); err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintf(stderr, "buzzload run: %v\n", e)
		}
		if code == engine.ExitOK {
			code = engine.ExitGeneric
		}
	}
	return code
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
