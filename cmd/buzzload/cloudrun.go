package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/output/cloud"
	"github.com/buzzload/buzzload/engine/termtext"
)

const cloudUsage = `usage: buzzload cloud run --local-execution [run flags] script.js|scenario.toml|archive.tar

Runs the test on this machine and streams it to Grafana Cloud k6, as k6 v2.2's
"k6 cloud run --local-execution" does: the test run is created through the
cloud's v6 and provisioning APIs (K6_CLOUD_TOKEN, K6_CLOUD_STACK_ID, a project
from options.cloud.projectID or K6_CLOUD_PROJECT_ID; K6_CLOUD_HOST_V6 for
another API host), the archive uploaded (--no-archive-upload to skip it),
metrics pushed with the run's own token, log lines streamed (--no-cloud-logs
to keep them local), and the cloud notified at the end. Every run flag works.

Without --local-execution the test runs on Grafana Cloud k6's own k6, as
"k6 cloud run" does: the archive is uploaded, the run started and followed
until it ends; exit 99 when its thresholds failed, 97 when the cloud says the
test failed (a script importing k6/x/buzz cannot run there: stock k6 has no
Buzz module).`

// cloudRunFlags are the flags `cloud run` adds to run's (k6 v2.2
// internal/cmd/cloud_run.go).
type cloudRunFlags struct {
	local, noArchive, noLogs bool
	// accepted as k6 accepts them: buzzload sends no usage report and has
	// no cloud secret source.
	noUsage, noSecrets bool
	// refused with --local-execution, as k6 refuses them
	exitOnRunning, showLogs bool
}

// splitCloudFlags takes cloud run's own flags out of args; the rest are
// run's.
func splitCloudFlags(args []string) (cloudRunFlags, []string, error) {
	var f cloudRunFlags
	fs := map[string]*bool{"local-execution": &f.local, "no-archive-upload": &f.noArchive, "no-cloud-logs": &f.noLogs,
		"no-usage-report": &f.noUsage, "no-cloud-secrets": &f.noSecrets, "exit-on-running": &f.exitOnRunning, "show-logs": &f.showLogs}
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		dst, ok := fs[name]
		if !strings.HasPrefix(a, "--") || !ok {
			rest = append(rest, a)
			continue
		}
		v := true
		if hasVal {
			b, err := strconv.ParseBool(val)
			if err != nil {
				return f, nil, fmt.Errorf("invalid argument %q for \"--%s\" flag: %v", val, name, err)
			}
			v = b
		}
		*dst = v
	}
	return f, rest, nil
}

// cloudCmd is `buzzload cloud run --local-execution`.
func cloudCmd(ctx context.Context, args []string, env cliEnv) int {
	if len(args) == 0 || args[0] != "run" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintln(env.Stdout, cloudUsage)
			return engine.ExitOK
		}
		fmt.Fprintln(env.Stderr, "buzzload cloud: the one subcommand is run (see buzzload cloud --help)")
		return engine.ExitGeneric
	}
	f, rest, err := splitCloudFlags(args[1:])
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	switch {
	case f.local && f.exitOnRunning:
		return logError(env.Stderr, fmt.Errorf("the --local-execution flag is not compatible with the --exit-on-running flag"), engine.ExitInvalidConfig)
	case f.local && f.showLogs:
		return logError(env.Stderr, fmt.Errorf("the --local-execution flag is not compatible with the --show-logs flag"), engine.ExitInvalidConfig)
	}
	for _, a := range rest {
		if a == "--help" || a == "-h" {
			fmt.Fprintln(env.Stdout, cloudUsage)
			return engine.ExitOK
		}
	}
	insp, code := inspectTest(ctx, "cloud run", cloudUsage, rest, env, func(*pflag.FlagSet) {}, func(cfg *engine.RunConfig) {
		cfg.Stderr = io.Discard // the run that follows logs the test's warnings and init output once
	})
	if insp == nil {
		return code
	}
	if !f.local {
		return remoteCloudRun(ctx, insp, env)
	}
	prov, err := provisionCloudRun(ctx, insp, f, env)
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	var logs *cloud.LogPusher
	if !f.noLogs {
		logs = cloud.NewLogPusher(prov)
		// The cloud output drains it before its notify; this covers a run
		// that ended before its outputs started.
		defer func() { _, _ = logs.Drain(context.WithoutCancel(ctx)) }()
	}
	// The run sees the test run's id as k6 gives it, and streams to it.
	runArgs := append([]string{"-e", "K6_CLOUDRUN_TEST_RUN_ID=" + strconv.FormatInt(prov.TestRunID, 10), "--out", "cloud"}, rest...)
	return runCmdWith(ctx, runArgs, env, runHooks{cloudRun: prov, cloudLogs: logs})
}

// remoteCloudRun runs the test on the cloud's k6 and follows it (k6 v2.2's
// remote `cloud run`).
func remoteCloudRun(ctx context.Context, insp *inspected, env cliEnv) int {
	cfg, err := cloud.ParseConfig(cloud.Inputs{Env: envMap(env.Env), ScriptEnv: insp.cfg.ScriptEnv, Options: insp.Merged, ScriptPath: insp.Script})
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	rc, err := cloud.NewRemote(cfg, version)
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	opts, err := insp.RequirementsJSON(false, true)
	if err == nil {
		opts, err = withCloudOptions(opts, insp.Merged)
	}
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	// k6 also puts the token into options.cloud here; buzzload never sends
	// a secret in a body (docs/k6-compat.md §7.5).
	if err := rc.Validate(ctx, cfg.ProjectID, opts); err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	tar, err := packArchive(insp, "buzzload cloud run", env.Stderr)
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	loadTest, err := rc.Upload(ctx, cfg.ProjectID, cfg.Name, tar)
	if err != nil {
		return logError(env.Stderr, fmt.Errorf("uploading test: %w", err), engine.ExitGeneric)
	}
	run, details, err := rc.Start(ctx, loadTest)
	if err != nil {
		return logError(env.Stderr, fmt.Errorf("starting test: %w", err), engine.ExitGeneric)
	}
	fmt.Fprintf(env.Stdout, "     execution: cloud\n        script: %s\n        output: %s\n", insp.Script, termtext.Clean(details))
	for _, l := range insp.Plan.Banner() {
		fmt.Fprintln(env.Stdout, l)
	}
	p, err := rc.Wait(ctx, run, 2*time.Second, func(p cloud.Progress) {
		fmt.Fprintf(env.Stdout, "cloud test run: %s\n", termtext.Clean(p.FormatStatus()))
	})
	if err != nil {
		return logError(env.Stderr, err, engine.ExitGeneric)
	}
	fmt.Fprintf(env.Stdout, "     test status: %s\n", termtext.Clean(p.FormatStatus()))
	switch p.Result {
	case "failed":
		//lint:ignore ST1005 k6's text, word for word
		return logError(env.Stderr, fmt.Errorf("Thresholds have been crossed"), engine.ExitThresholdsFailed)
	case "error":
		//lint:ignore ST1005 k6's text, word for word
		return logError(env.Stderr, fmt.Errorf("The test has failed"), engine.ExitCloudTestRunFailed)
	}
	return engine.ExitOK
}

// provisionCloudRun prepares the test run in the cloud from the loaded test.
func provisionCloudRun(ctx context.Context, insp *inspected, f cloudRunFlags, env cliEnv) (*cloud.Provisioned, error) {
	cfg, err := cloud.ParseConfig(cloud.Inputs{Env: envMap(env.Env), ScriptEnv: insp.cfg.ScriptEnv, Options: insp.Merged, ScriptPath: insp.Script})
	if err != nil {
		return nil, err
	}
	if err := cloud.CheckLogin(cfg); err != nil {
		return nil, err
	}
	opts, err := insp.RequirementsJSON(false, true)
	if err != nil {
		return nil, err
	}
	opts, err = withCloudOptions(opts, insp.Merged)
	if err != nil {
		return nil, err
	}
	var tar []byte
	if !f.noArchive {
		if tar, err = packArchive(insp, "buzzload cloud run", env.Stderr); err != nil {
			return nil, err
		}
	}
	prov, err := cloud.Provision(ctx, cloud.ProvisionParams{Config: cfg, MaxVUs: insp.Plan.MaxVUs, TotalDuration: insp.Plan.MaxDuration,
		Options: opts, Archive: tar, Version: version,
		Warn: func(m string) { fmt.Fprintf(env.Stderr, "buzzload cloud run: %s\n", m) }})
	if err != nil {
		return nil, fmt.Errorf("could not create the cloud test run: %w", err)
	}
	return prov, nil
}

// withCloudOptions adds options.cloud (which k6 sends in the options it
// gives the cloud, and inspect does not print) to the options JSON.
func withCloudOptions(opts, merged json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(opts, &m); err != nil {
		return nil, err
	}
	var mo struct {
		Cloud json.RawMessage `json:"cloud"`
	}
	if err := json.Unmarshal(merged, &mo); err == nil && len(mo.Cloud) > 0 {
		m["cloud"] = mo.Cloud
	}
	return json.Marshal(m)
}
