package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/features"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/output"
	"github.com/buzzload/buzzload/engine/output/cloud"
)

// Layer is one configuration layer above the script: the K6_* environment
// or the command-line flags. Nil/empty fields are "not set".
type Layer struct {
	Exec    executor.ExecutionOptions
	Options Options
}

// RunConfig is everything `buzzload run` decided before the script loads.
type RunConfig struct {
	// Script is the script path; Source, when set, is its content.
	Script string
	// TestName is what the user ran when Script is generated for it (a
	// scenario file's <file>.toml.js): outputs name the test after it.
	TestName string
	Source   []byte
	// Registry holds the Go modules (built-ins plus extensions).
	Registry *jsmodule.Registry
	// Helpers is the embedded JS helpers FS (served as buzzload/<file>).
	Helpers fs.FS
	// ScriptEnv is __ENV: the system env when included, plus -e values.
	ScriptEnv map[string]string
	// ProcessEnv is the process environment (K6_CSV_*, NO_COLOR), whatever
	// the script sees.
	ProcessEnv map[string]string

	// ConfigFile is the JSON config (-c/--config), the lowest layer after
	// the defaults; ConfigFileName names it in errors.
	ConfigFile     json.RawMessage
	ConfigFileName string
	// Env is the K6_* environment layer, CLI the flag layer.
	Env, CLI Layer

	// Runtime options (flags and env only).
	// Features is the --features flag (k6 v2.1's feature flags; the
	// environment and the config file's "features" are read by the run).
	Features      features.Source
	NoThresholds  bool
	SummaryMode   string // compact (default), full, legacy, disabled
	SummaryExport string
	Outputs       []string
	// Version is buzzload's, for what outputs send (the cloud's User-Agent).
	Version string
	// ExtraOutputs are outputs the caller made and started (the web
	// dashboard, whose server and end the caller owns): the run feeds them
	// and stops them with the others. BannerLines go in the banner above
	// "output:" (k6's "web dashboard: URL").
	ExtraOutputs []output.Output
	// CloudRun and CloudLogs are a test run `cloud run --local-execution`
	// provisioned and its log stream (the cloud output pushes to it; every
	// log line goes to the stream too).
	CloudRun *cloud.Provisioned
	// NoDeriveWarnings leaves out the warnings of deriving the scenarios
	// (plain `inspect`, which in k6 v2.2 derives none).
	NoDeriveWarnings bool
	CloudLogs        *cloud.LogPusher
	BannerLines      []string
	Quiet            bool
	Verbose          bool
	// StartAt, when set, holds the run after VU init until that moment, so
	// the instances of a distributed run start together (our stand-in for
	// k6-operator's paused start).
	StartAt time.Time
	// GroupBy adds grouped sinks over every metric, one per list of tag
	// keys (e.g. {"op"}), to the final snapshot: `run --result` keeps
	// per-operation data for `buzzload compare` this way.
	GroupBy [][]string

	Stdout, Stderr       io.Writer
	StdoutTTY, StderrTTY bool
	// Console, when set, is where text printed while the run goes must be
	// written so the terminal progress block is not drawn over it.
	Console *Console
	// PlainProgressEvery is how often a progress line is appended when
	// stderr is not a terminal; 0 means every 10 s.
	PlainProgressEvery time.Duration
	// Control, when set, is the run as the REST API steers it: status,
	// the resume of a paused run (NewControl(true)), the stop.
	Control *Control
	// ReadFile reads the script's local files (an archive's, for `run
	// x.tar`); nil means the file system.
	ReadFile func(string) ([]byte, error)
	// ArchiveLayers are the env and flag layers an archive was made with:
	// above the script, below this run's env and flags.
	ArchiveLayers []Layer
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// OnEnd, when set, learns how the run ended (its exit code so far and
	// the first error) once the VUs are done and before handleSummary, so
	// a module's report can follow the run's end (issue 30 F5).
	OnEnd func(code int, err error)
	// OnOutputs, when set, learns the outputs' delivery counts
	// (output.Counter) once they stopped, before OnEnd and handleSummary, so
	// a module's report can judge them (issue 43 L6).
	OnOutputs func([]output.Counts)
}

var envKeyRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ScriptEnv builds __ENV: the system environment when includeSystem is set
// (the default for `run`), then each -e KEY=VALUE on top.
func ScriptEnv(system []string, includeSystem bool, flags []string) (map[string]string, error) {
	env := map[string]string{}
	if includeSystem {
		for _, kv := range system {
			for i := 0; i < len(kv); i++ {
				if kv[i] == '=' {
					env[kv[:i]] = kv[i+1:]
					break
				}
			}
		}
	}
	for _, kv := range flags {
		k, v, ok := cut(kv, '=')
		if !ok || !envKeyRE.MatchString(k) {
			return nil, fmt.Errorf("--env %q: want KEY=VALUE with KEY matching %s", kv, envKeyRE)
		}
		env[k] = v
	}
	return env, nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
