package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/archive"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/extension"
)

// The commands k6-operator's initializer runs (docs/k6-operator.md):
//
//	k6 archive <script> [-e NAME=VALUE ...] -O /tmp/x.archived.tar <args>
//	k6 inspect --execution-requirements /tmp/x.archived.tar
//
// Both print nothing but their result on stdout (the operator parses the
// initializer's whole stdout as one JSON document) and report a broken
// script as one `level=error` logfmt line on stderr with k6's exit code.

const archiveUsage = `usage: buzzload archive [flags] script.js|scenario.toml|archive.tar -O archive.tar

Packs the script, its imports, the files its init code opens (the scenario
TOML buzz.load reads among them), the -e values and the option flags into
one tar that 'buzzload run' and 'buzzload inspect' take. Accepts the flags
of 'buzzload run'.`

const inspectUsage = `usage: buzzload inspect [--execution-requirements] [flags] script.js|archive.tar

Prints the test's consolidated options as JSON; --execution-requirements
adds maxVUs and totalDuration (graceful stops and segments included), as
k6 inspect does.`

// archiveCmd is `buzzload archive`.
func archiveCmd(ctx context.Context, args []string, env cliEnv) int {
	var out string
	insp, code := inspectTest(ctx, "archive", archiveUsage, args, env, func(fs *pflag.FlagSet) {
		fs.StringVarP(&out, "archive-out", "O", "archive.tar", "archive output file")
	}, nil)
	if insp == nil {
		return code
	}
	tar, err := packArchive(insp, "buzzload archive", env.Stderr)
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	if err := os.WriteFile(out, tar, 0o644); err != nil {
		return logError(env.Stderr, fmt.Errorf("writing the archive: %w", err), engine.ExitGeneric)
	}
	return engine.ExitOK
}

// packArchive packs a loaded test as k6's archive, leaving out the
// environment variables that hold secrets (named on stderr under who).
func packArchive(insp *inspected, who string, stderr io.Writer) ([]byte, error) {
	packed, left := withoutSecrets(insp.cfg.ScriptEnv, insp.envFlags)
	if len(left) > 0 {
		fmt.Fprintf(stderr, "%s: left out of the archive as secrets: %s (name one with -e KEY=VALUE to pack it)\n", who, strings.Join(left, ", "))
	}
	a := &archive.Archive{Metadata: archive.Metadata{
		Script: insp.Script, Env: packed,
		ConfigFile: insp.cfg.ConfigFile, ConfigFileName: insp.cfg.ConfigFileName,
		Layers:  append(append([]engine.Layer(nil), insp.cfg.ArchiveLayers...), insp.cfg.Env, insp.cfg.CLI),
		Options: insp.Merged,
	}, Files: insp.Files}
	var buf bytes.Buffer
	if err := archive.Write(&buf, a); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// inspectCmd is `buzzload inspect`.
func inspectCmd(ctx context.Context, args []string, env cliEnv) int {
	var execReqs bool
	insp, code := inspectTest(ctx, "inspect", inspectUsage, args, env, func(fs *pflag.FlagSet) {
		fs.BoolVar(&execReqs, "execution-requirements", false, "add maxVUs and totalDuration, computed as k6 does")
	}, func(cfg *engine.RunConfig) {
		// Plain inspect: k6 v2.2 derives no scenarios, so it warns of none.
		cfg.NoDeriveWarnings = !execReqs
	})
	if insp == nil {
		return code
	}
	// An archive's options are consolidated already, defaults included; k6
	// shows the defaults with the execution requirements too, so an
	// archive's requirements equal its script's.
	doc, err := insp.RequirementsJSON(execReqs, insp.fromArchive || execReqs)
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	_, _ = env.Stdout.Write(doc) // k6 v2.2.0 ends it without a newline (observed)
	return engine.ExitOK
}

// inspected is a loaded test and the configuration it was loaded with.
type inspected struct {
	*engine.Inspection
	cfg         engine.RunConfig
	fromArchive bool
	envFlags    []string // the -e KEY=VALUE given
}

// inspectTest parses the flags of `buzzload <name>` (run's, plus extra),
// loads the test (script, scenario file or archive) without running it and
// returns it; on failure it has logged the error and returns nil and the
// exit code.
func inspectTest(ctx context.Context, name, usage string, args []string, env cliEnv, extra func(*pflag.FlagSet), adjust func(*engine.RunConfig)) (*inspected, int) {
	stderr := env.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	f := newRunFlags(stderr)
	// __ENV holds only the -e values unless asked (k6: off for archive and
	// inspect, on for run).
	f.includeSystemEnv = false
	f.fs.Lookup("include-system-env-vars").DefValue = "false"
	extra(f.fs)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, engine.ExitOK
		}
		return nil, logError(stderr, fmt.Errorf("%s: %w", name, err), engine.ExitGeneric)
	}
	if f.help {
		fmt.Fprintln(env.Stdout, usage)
		f.fs.SetOutput(env.Stdout)
		f.fs.PrintDefaults()
		return nil, engine.ExitOK
	}
	if f.fs.NArg() != 1 {
		return nil, logError(stderr, fmt.Errorf("%s: want exactly one script or archive argument (see buzzload %s --help)", name, name), engine.ExitGeneric)
	}
	cfg, err := buildRunConfig(f, f.fs.Arg(0), env)
	if err != nil {
		return nil, logError(stderr, err, engine.ExitCode(err))
	}
	reg, _, closeModules, err := newModuleRegistry(env.Env, env.Lookup, extension.Options{Console: io.Discard})
	if err != nil {
		return nil, logError(stderr, err, engine.ExitGeneric)
	}
	defer func() { _ = closeModules() }()
	cfg.Registry = reg
	cfg.Stderr = stderr
	if adjust != nil {
		adjust(&cfg)
	}
	insp, err := engine.Inspect(ctx, cfg)
	if err != nil {
		return nil, logError(stderr, err, engine.ExitCode(err))
	}
	return &inspected{Inspection: insp, cfg: cfg, fromArchive: cfg.ReadFile != nil, envFlags: f.env}, engine.ExitOK
}

// logError writes err as one k6-style logfmt line (`level=error`) and
// returns code.
func logError(w io.Writer, err error, code int) int {
	if w == nil {
		w = io.Discard
	}
	jshost.NewLogger(w, jshost.LevelInfo).Log(jshost.LevelError, err.Error())
	return code
}

// useArchive makes cfg run the archived test at p: its files instead of the
// disk, its option layers above the script's and below this run's, its -e
// values above the system environment and below this run's -e.
func useArchive(cfg *engine.RunConfig, p string, envFlags []string) error {
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	defer fh.Close()
	lim, err := archiveLimits(os.Getenv)
	if err != nil {
		return err
	}
	a, err := archive.ReadLimited(fh, lim)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	cfg.Script, cfg.Source, cfg.ReadFile = a.Script, nil, a.ReadFile
	cfg.ArchiveLayers = a.Layers
	if cfg.ConfigFile == nil && a.ConfigFile != nil {
		cfg.ConfigFile, cfg.ConfigFileName = a.ConfigFile, a.ConfigFileName
	}
	fromFlags := map[string]bool{}
	for _, kv := range envFlags {
		k, _, _ := strings.Cut(kv, "=")
		fromFlags[k] = true
	}
	env := make(map[string]string, len(cfg.ScriptEnv)+len(a.Env))
	for k, v := range cfg.ScriptEnv {
		env[k] = v
	}
	for k, v := range a.Env {
		if !fromFlags[k] {
			env[k] = v
		}
	}
	cfg.ScriptEnv = env
	return nil
}

// archiveLimits are archive.DefaultLimits, raised (or lowered) by
// BUZZLOAD_ARCHIVE_MAX_BYTES and BUZZLOAD_ARCHIVE_MAX_ENTRIES.
func archiveLimits(getenv func(string) string) (archive.Limits, error) {
	lim := archive.DefaultLimits()
	if v := getenv("BUZZLOAD_ARCHIVE_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return lim, fmt.Errorf("BUZZLOAD_ARCHIVE_MAX_BYTES: %q is not a positive number of bytes", v)
		}
		lim.MaxBytes = n
	}
	if v := getenv("BUZZLOAD_ARCHIVE_MAX_ENTRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return lim, fmt.Errorf("BUZZLOAD_ARCHIVE_MAX_ENTRIES: %q is not a positive number", v)
		}
		lim.MaxEntries = n
	}
	return lim, nil
}

// secretEnv are the variables buzzload knows to hold secrets: the operator
// key, Buzz's secrets, Prometheus and Grafana Cloud credentials, the
// identity secret. --include-system-env-vars packs every variable (as k6
// does), so these are left out unless -e names them (issue 30 F8).
var secretEnv = regexp.MustCompile(`^(BUZZLOAD_OPERATOR_KEY|BUZZLOAD_IDENTITY_SECRET|BUZZ_.*SECRET.*|K6_PROMETHEUS_RW_(PASSWORD|BEARER_TOKEN|CLIENT_CERTIFICATE_KEY|HEADERS_.*)|K6_CLOUD_TOKEN|K6_OTEL_(HEADERS|TLS_CLIENT_KEY)|OTEL_EXPORTER_OTLP_(METRICS_)?HEADERS|.*(PASSWORD|PASSWD|SECRET|TOKEN|PRIVATE_KEY|NSEC|API_KEY|CREDENTIALS).*)$`)

// withoutSecrets is env less the secret variables that no -e flag named,
// and the names it left out, sorted.
func withoutSecrets(env map[string]string, flags []string) (map[string]string, []string) {
	named := map[string]bool{}
	for _, kv := range flags {
		k, _, _ := strings.Cut(kv, "=")
		named[k] = true
	}
	out := make(map[string]string, len(env))
	var left []string
	for k, v := range env {
		if secretEnv.MatchString(strings.ToUpper(k)) && !named[k] {
			left = append(left, k)
			continue
		}
		out[k] = v
	}
	sort.Strings(left)
	return out, left
}
