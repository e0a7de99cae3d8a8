package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/internal/sysmem"
	"github.com/buzzload/buzzload/modules/plan"
	"github.com/buzzload/buzzload/modules/scenario"
)

const planUsage = `usage: buzzload plan scenario.toml [--users N | --step i] [--duration D] [--mode legacy|current|both] [--json]

Simulates the scenario's clients without sockets — basic humans, desktop
humans, agents, hot-thread authors, with the same schedules, membership and
desktop decisions as a run — and prints what the relay would see: per op and
per endpoint the mean and the peak-minute rate, open connections and
subscriptions, #h channels per REQ, connects by cause, events by kind,
fan-out deliveries, bytes each way, per community and for the largest
channel. Only the relay's answers are modelled (every REQ replays what the
relay stores and reaches its EOSE, reads succeed unless --fail-rate).

Without --users or --step it simulates the scenario's whole ramp, as
'buzzload run' would drive it. --users N holds N units of the population
(as [[ramp]] users: population.humans × N humans, ...) for --duration
(default 1h), joining over the first step's ramp_secs; --step i holds
step i's users.

flags:
`

func planCmd(ctx context.Context, args []string, env cliEnv) int {
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	users := fs.Float64("users", 0, "hold this many units of the population (as [[ramp]] users)")
	stepFlag := fs.String("step", "", "hold ramp step i's users (0 is the first step)")
	dur := fs.Duration("duration", 0, "simulated time (default: the ramp's length; 1h with --users)")
	rampFlag := fs.String("ramp", "", "with --users/--step: how long the clients take to join (default the step's ramp_secs)")
	mode := fs.String("mode", "", "desktop mode: legacy, current or both (default the scenario's)")
	failRate := fs.Float64("fail-rate", 0, "share of replays and HTTP reads that fail (0..1)")
	latency := fs.Duration("latency", 0, "every answer's delay")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	shards := fs.Int("shards", 0, "split the clients over this many simulations side by side (default: 2 from 20,000 clients with one mode, else 1)")
	capOnly := fs.Bool("capacity", false, "estimate a capacity search of the scenario ([capacity]): its probes, its length, and what its largest probe asks of the relay")
	pubkeys := fs.Bool("pubkeys", false, "print the run's identities (hex pubkeys, one a line: the owners, then every client at the peak) for a relay's allowlist (BUZZ_PUBKEY_ALLOWLIST), and nothing else")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload plan: %v\n%s%s", err, planUsage, fs.FlagUsages())
		return 2
	}
	if *help {
		fmt.Fprint(env.Stdout, planUsage+fs.FlagUsages())
		return 0
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.Stderr, "buzzload plan: want one scenario .toml, got %d arguments\n%s", fs.NArg(), planUsage)
		return 2
	}
	step, ramp := -1, time.Duration(-1)
	if *stepFlag != "" {
		n, err := strconv.Atoi(*stepFlag)
		if err != nil || n < 0 {
			fmt.Fprintf(env.Stderr, "buzzload plan: --step %q: want a step number from 0\n", *stepFlag)
			return 2
		}
		step = n
	}
	if *rampFlag != "" {
		d, err := time.ParseDuration(*rampFlag)
		if err != nil || d < 0 {
			fmt.Fprintf(env.Stderr, "buzzload plan: --ramp %q: want a duration such as 5m\n", *rampFlag)
			return 2
		}
		ramp = d
	}
	sc, err := scenario.Load(fs.Arg(0))
	if err == nil {
		err = sc.CheckMemory(sysmem.Available())
	}
	if err != nil {
		// Invalid configuration: 104 whichever command met it (issue 47 item 3).
		fmt.Fprintf(env.Stderr, "buzzload plan: %s\n", termtext.Lines(err.Error()))
		return configerr.Exit
	}
	if *pubkeys {
		// The identities mix in the run's secret, as the run derives them.
		if _, err := sc.SetIdentitySecret(envLookup(env.Env)); err != nil {
			fmt.Fprintf(env.Stderr, "buzzload plan: %s\n", termtext.Lines(err.Error()))
			return configerr.Exit
		}
		for _, pk := range sc.PubKeys() {
			fmt.Fprintln(env.Stdout, pk)
		}
		return 0
	}
	if *capOnly {
		return planCapacity(env, fs.Arg(0), sc, *asJSON, *failRate, *latency)
	}
	if err := reshapeRamp(sc, *users, step, *dur, ramp); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload plan: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	modes := []string{sc.Desktop.Mode}
	switch *mode {
	case "":
	case "both":
		modes = []string{scenario.ModeLegacy, scenario.ModeCurrent}
	case scenario.ModeLegacy, scenario.ModeCurrent:
		modes = []string{*mode}
	default:
		fmt.Fprintf(env.Stderr, "buzzload plan: --mode %q: want legacy, current or both\n", *mode)
		return 2
	}
	// Each mode is its own simulation: run them side by side, one a core.
	results := make([]*plan.Result, len(modes))
	errs := make([]error, len(modes))
	var wg sync.WaitGroup
	for i, m := range modes {
		c := *sc
		c.Desktop.Mode = m
		cfg := planConfig(&c, *failRate, *latency)
		cfg.Shards = *shards
		if cfg.Shards == 0 {
			cfg.Shards = autoShards(cfg, len(modes))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = plan.Run(cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload plan: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		var v any = results[0]
		if len(results) > 1 {
			v = results
		}
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(env.Stderr, "buzzload plan: %s\n", termtext.Lines(err.Error()))
			return 1
		}
		return 0
	}
	plan.WriteText(env.Stdout, results...)
	return 0
}

// autoShards splits a large population over two simulations when only one
// mode runs (two modes already fill two cores). It does not depend on the
// machine, so a plan gives the same numbers everywhere.
func autoShards(cfg plan.Config, modes int) int {
	n := 0
	for _, s := range cfg.Starts {
		n += len(s)
	}
	if n >= 20000 && modes == 1 {
		return 2
	}
	return 1
}

// reshapeRamp replaces the scenario's ramp by one held step when --users
// or --step asks for it, and sets the simulated length.
func reshapeRamp(sc *scenario.Scenario, users float64, step int, dur, ramp time.Duration) error {
	if users > 0 && step >= 0 {
		return errors.New("--users and --step are exclusive")
	}
	if math.IsNaN(users) || math.IsInf(users, 0) || users < 0 {
		return fmt.Errorf("--users %v: want a positive number", users)
	}
	if step >= len(sc.Ramp) {
		return fmt.Errorf("--step %d: the scenario has %d ramp steps", step, len(sc.Ramp))
	}
	if users == 0 && step < 0 {
		sc.SetDuration(dur) // a shorter look at the same ramp, or a longer last hold
		return nil
	}
	st := sc.Ramp[0]
	if step >= 0 {
		st = sc.Ramp[step]
		if dur <= 0 {
			dur = scenario.Secs(st.RampSecs + st.HoldSecs)
		}
	} else {
		st.Users = users
		if dur <= 0 {
			dur = time.Hour
		}
	}
	if ramp >= 0 {
		st.RampSecs = ramp.Seconds()
	}
	st.RampSecs = math.Min(st.RampSecs, dur.Seconds())
	st.HoldSecs = dur.Seconds() - st.RampSecs
	sc.Ramp = []scenario.Step{st}
	return nil
}

// planConfig places every kind's clients on the timeline with the runner's
// own ramping-vus staircase (the stages sc.options() gives the runner), so
// the plan starts each client when the run's VU for it would start (a VU
// of several humans starts them together: population.humans_per_vu).
func planConfig(sc *scenario.Scenario, failRate float64, latency time.Duration) plan.Config {
	cfg := plan.Config{Scenario: sc, Duration: sc.Duration(), FailRate: failRate, Latency: latency}
	peak := sc.CountsAt(sc.PeakUsers(), scenario.Shard{})
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		per := sc.ClientsPerVU(k)
		var stages []executor.Stage
		for _, st := range sc.Stages(k, scenario.Shard{}) {
			stages = append(stages, executor.Stage{Duration: st.Duration, Target: int64(st.Target), Name: st.Name})
		}
		rv := executor.RampingVUsConfig{Stages: stages}
		prev := int64(0)
		for _, s := range rv.RawSteps(segment.FullTuple()) {
			for v := prev; v < s.PlannedVUs; v++ {
				for range per {
					if len(cfg.Starts[k]) < peak[k] {
						cfg.Starts[k] = append(cfg.Starts[k], s.Offset)
					}
				}
			}
			prev = max(prev, s.PlannedVUs)
		}
	}
	return cfg
}
