package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/capacity"
	"github.com/buzzload/buzzload/modules/plan"
	"github.com/buzzload/buzzload/modules/scenario"
)

// probeOverheadSecs is a probe's cost beyond its ramp, settling and
// judged hold: starting the run (and its relay), the seed, the end's
// read-backs. Measured: scenarios/local-capacity.toml's probes of 17 s
// took 17–20 s (6 Dec 2026).
const probeOverheadSecs = 2

// capacityEstimate is `plan --capacity`'s answer.
type capacityEstimate struct {
	ProbeSecs float64 `json:"probe_secs"` // one probe, its start and end included
	// Rising are the rising phase's sizes up to max_users.
	Rising []int `json:"rising"`
	// BisectProbes: probes to narrow a failure to the resolution;
	// RepeatProbes: each further search of the edge.
	BisectProbes int `json:"bisect_probes"`
	RepeatProbes int `json:"repeat_probes"`
	// WorstProbes: a knee at max_users; WorstMinutes their length.
	WorstProbes  int     `json:"worst_probes"`
	WorstMinutes float64 `json:"worst_minutes"`
	// BudgetProbes: what max_minutes allows; Largest the largest size the
	// rising phase reaches within it.
	BudgetProbes int          `json:"budget_probes"`
	Largest      int          `json:"largest"`
	LargestPlan  *plan.Result `json:"largest_probe"`
}

// planCapacity estimates a capacity search from the scenario's [capacity]
// and simulates its largest probe within the budget.
func planCapacity(env cliEnv, path string, sc *scenario.Scenario, asJSON bool, failRate float64, latency time.Duration) int {
	cp := sc.Capacity
	e := capacityEstimate{ProbeSecs: cp.RampSecs + cp.SettleSecs + cp.ProbeSecs + probeOverheadSecs}
	for u := max(cp.StartUsers, capacity.MinUsers(sc.Population)); ; {
		e.Rising = append(e.Rising, u)
		if u >= cp.MaxUsers {
			break
		}
		u = min(cp.MaxUsers, max(u+1, int(math.Ceil(float64(u)*cp.Growth))))
	}
	e.BisectProbes = int(math.Ceil(math.Log2(1/cp.Resolution))) + 1
	e.RepeatProbes = 3 // a bracket of ±2 resolutions: two halvings and its lower end
	e.WorstProbes = len(e.Rising) + e.BisectProbes + (cp.Repeats-1)*e.RepeatProbes
	e.WorstMinutes = float64(e.WorstProbes) * e.ProbeSecs / 60
	e.BudgetProbes = int(cp.MaxMinutes * 60 / e.ProbeSecs)
	e.Largest = e.Rising[min(len(e.Rising), max(1, e.BudgetProbes))-1]
	src, err := os.ReadFile(path)
	if err == nil {
		var probe []byte
		probe, err = capacity.ProbeTOML(src, sc.Population, e.Largest, capacity.Phases{RampSecs: cp.RampSecs, SettleSecs: cp.SettleSecs, ProbeSecs: cp.ProbeSecs}, nil)
		if err == nil {
			var psc *scenario.Scenario
			if psc, err = scenario.Parse(path, probe); err == nil {
				cfg := planConfig(psc, failRate, latency)
				cfg.Shards = autoShards(cfg, 1)
				e.LargestPlan, err = plan.Run(cfg)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload plan: the largest probe: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(e); err != nil {
			return 1
		}
		return 0
	}
	w := env.Stdout
	fmt.Fprintf(w, "capacity search of %s: probes of about %.0f s (ramp %g + settle %g + judged %g, and ~%d s to start and end)\n",
		termtext.Clean(path), e.ProbeSecs, cp.RampSecs, cp.SettleSecs, cp.ProbeSecs, probeOverheadSecs)
	fmt.Fprintf(w, "  rising: %v people (%d probes up to max_users %d)\n", e.Rising, len(e.Rising), cp.MaxUsers)
	fmt.Fprintf(w, "  a failure narrowed to resolution %g: about %d probes; each of the %d more searches of the edge: about %d\n",
		cp.Resolution, e.BisectProbes, cp.Repeats-1, e.RepeatProbes)
	fmt.Fprintf(w, "  at most %d probes (%.1f min) if the knee is at max_users; max_minutes %g allows %d: the largest probe within it, %d people\n",
		e.WorstProbes, e.WorstMinutes, cp.MaxMinutes, e.BudgetProbes, e.Largest)
	fmt.Fprintf(w, "\nthe largest probe, %d people, asks of the relay:\n", e.Largest)
	plan.WriteText(w, e.LargestPlan)
	return 0
}
