package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

const teardownUsage = `usage: buzzload teardown [flags] SCENARIO.toml

Removes the communities 'buzzload seed' provisioned from the scenario's
target.community_host_template, with the operator key seed used. For each host
it archives the community as its fixture owner, then requests owner deletion
with a request id derived from run_id and the host. The relay deletes
asynchronously; each host is reported by the stage the relay returned
(requested), as absent (this run's fixture owner holds no such host), or as
failed. It never touches a host owned by anyone else and refuses a scenario
without a host template. Rerunning it replays the same request ids: it retries
failures and reports progress.

Deleted hosts stay reserved, so a torn-down run_id cannot be seeded again.

Exit status: 0 when no host failed, 1 while any failed (or teardown could not
start), 2 for usage errors, 104 for an invalid scenario file or a missing
operator key.

flags:
`

// teardownCmd runs `buzzload teardown`.
func teardownCmd(ctx context.Context, args []string, env cliEnv) int {
	const name = "buzzload teardown"
	fs := pflag.NewFlagSet("teardown", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	jsonOut := fs.Bool("json", false, "print the result as JSON on stdout instead of the summary")
	quiet := fs.BoolP("quiet", "q", false, "print no progress lines on stderr")
	sc, code, ok := loadScenarioArgs(name, teardownUsage, fs, args, env)
	if !ok {
		return code
	}
	if sc.Target.CommunityHostTemplate == "" {
		fmt.Fprintf(env.Stderr, "%s: %s: %v\n", name, fs.Arg(0), seed.ErrNoHostTemplate)
		return 1
	}
	op, err := sc.OperatorKey(envLookup(env.Env))
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: operator key: %s\n", name, termtext.Lines(err.Error()))
		return configerr.Exit
	}
	ctx, stop := signalContext(ctx, name, env)
	defer stop()
	if code, ok := reachable(ctx, name, sc, env); !ok {
		return code
	}
	pl := newProgressLine(env.Stderr, "teardown", *quiet)
	defer pl.stop()
	res, err := seed.Teardown(ctx, sc, seed.TeardownOptions{Operator: op, Progress: pl.update})
	pl.stop()
	return finish(name, env, *jsonOut, res, err,
		func(r *seed.TeardownResult) { printTeardownSummary(env.Stdout, sc, r) },
		func(r *seed.TeardownResult) bool { return r.Failed() > 0 })
}

func printTeardownSummary(w io.Writer, sc *scenario.Scenario, r *seed.TeardownResult) {
	fmt.Fprintf(w, "teardown %s (run_id %s) in %v\n", sc.File, r.RunID, r.Duration.Round(time.Millisecond))
	requested := 0
	for _, h := range r.Hosts {
		var line string
		switch h.Stage {
		case seed.StageAbsent:
			line = "absent (this run's fixture owner holds no such host)"
		case seed.StageFailed:
			line = "failed: " + h.Error
		default:
			requested++
			line = "requested, stage " + h.Stage + ", request " + h.RequestID
			if h.Error != "" {
				line += " (" + h.Error + ")"
			}
		}
		fmt.Fprintf(w, "  %-40s %s\n", h.Host, line)
	}
	stages := r.ByStage()
	var relayStages []string
	for s := range stages {
		if s != seed.StageAbsent && s != seed.StageFailed {
			relayStages = append(relayStages, s)
		}
	}
	sort.Strings(relayStages)
	detail := ""
	for i, s := range relayStages {
		if i == 0 {
			detail = " ("
		} else {
			detail += ", "
		}
		detail += fmt.Sprintf("%d %s", stages[s], s)
		if i == len(relayStages)-1 {
			detail += ")"
		}
	}
	fmt.Fprintf(w, "%d requested%s, %d absent, %d failed\n", requested, detail, stages[seed.StageAbsent], stages[seed.StageFailed])
}
