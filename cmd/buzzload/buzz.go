package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
)

// ExitUnreachable is the exit code of a run whose preflight failed: the
// target's NIP-11, WebSocket (connect and AUTH) or operator API did not
// answer before any seeding or traffic, so CI tells "relay down" from
// "relay too slow" (99). README "Exit codes".
const ExitUnreachable = 111

// ExitLost is the exit code of a run whose durability audit found
// acknowledged events missing when read back (and that failed nothing
// else): the relay lost data it had confirmed. README "Exit codes".
const ExitLost = 112

// buzzFlags are the Buzz options of `buzzload run` (buzz-loadgen's
// --shard and --report, and the long-run options of issue 13).
type buzzFlags struct {
	shard          string
	report         string
	reportHTML     string
	reportInterval time.Duration
	warmup         time.Duration
}

func addBuzzFlags(fs *pflag.FlagSet, b *buzzFlags) {
	fs.StringVar(&b.shard, "shard", "", "run shard i of n of every scenario's clients, e.g. 0/4 (buzz-loadgen's --shard; each kind dealt evenly over the shards)")
	fs.StringVar(&b.report, "report", "", "write the Buzz report's JSON to this file (a report that cannot be written fails the run)")
	fs.StringVar(&b.reportHTML, "report-html", "", "write the Buzz report as one self-contained HTML page with plots (buzzload report)")
	fs.DurationVar(&b.reportInterval, "report-interval", 0, "print a window of per-operation numbers this often while the run goes (default 10s for runs under 10m, 60s above; 0s prints none)")
	fs.DurationVar(&b.warmup, "warmup", 0, "report what settles in the first DURATION of the run apart and do not judge it (replaces [abort] warmup_secs)")
}

const runUsage = `usage: buzzload run [flags] script.js
       buzzload run [flags] scenario.toml

A .js file is a k6 script. A .toml file is a Buzz scenario (docs/scenario.md)
run with the standard script built in: the shape of scenarios/local-smoke.js,
which seeds in setup, runs one ramping-vus scenario per population of the
file's [[ramp]] and prints the Buzz report (its JSON only with --report).
`

// moduleOptions turns the Buzz flags into the module's options.
func (b *buzzFlags) moduleOptions(fs *pflag.FlagSet, stdout io.Writer, abort func(error)) (extension.Options, error) {
	o := extension.Options{ReportPath: b.report, Console: stdout, Abort: abort}
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
	if rep := buzz.LastReport(); rep != nil && rep.Durability != nil && rep.Durability.Missing > 0 && code == engine.ExitOK {
		fmt.Fprintf(stderr, "buzzload run: %d acknowledged events were missing when read back after the run (exit %d)\n", rep.Durability.Missing, ExitLost)
		code = ExitLost
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
