// Package executor implements k6's scenarios and executors for buzzload
// (docs/k6-compat.md §2): parsing `options.scenarios` and the shortcut options
// into typed configs, the pure execution plans (VU steps, the ramping-vus
// staircase, arrival-rate start times, VU planning across scenarios), and
// the runtime scheduler that runs several scenarios at once on a shared VU
// pool. Execution segments (package segment) split every plan exactly.
//
// Each executor has its file, named for it (shared_iterations.go,
// per_vu_iterations.go, constant_vus.go, ramping_vus.go,
// constant_arrival_rate.go, ramping_arrival_rate.go): its config,
// validation, plan steps, description and run loop. config.go parses and
// validates scenarios, shortcuts.go the shortcut options, steps.go and
// plan.go are the shared planning, scheduler.go, pool.go, run_vus.go and
// run_arrival.go the shared runtime.
//
// It knows nothing about JavaScript or metrics. The integrator (engine/jshost
// and `buzzload run`) provides:
//
//   - VU: one initialised VU. Activate(*ScenarioInfo) is called when the VU
//     joins a scenario (reset tags, merge env, pick the exec function);
//     RunIteration(ctx, *Iteration) runs one iteration and must return soon
//     after ctx is cancelled (interrupt the JS runtime).
//   - VUFactory: creates a VU with its idInInstance and idInTest; used by
//     Pool.Init before setup() and by arrival-rate scenarios at run time.
//   - Observer: receives scenario and stage boundaries (per-stage
//     thresholds), dropped iterations (one dropped_iterations sample each)
//     and the "Insufficient VUs" warning. Embed NopObserver.
//
// Counters for the `vus`/`vus_max` metrics, exec.instance and the progress
// line are read from the Scheduler (ActiveVUs, AllocatedVUs,
// IterationsCompleted, IterationsInterrupted, Progress) at any time.
//
// Typical use:
//
//	opts, err := executor.ParseExecutionOptions(scriptOptionsJSON)
//	cli, err := executor.CLIOptions(vusFlag, durationFlag, iterationsFlag, stageFlags)
//	opts, warnings := executor.Merge(opts, cli, "cli")
//	configs, warnings, err := opts.DeriveScenarios() // *configerr.Error → exit 104
//	plan, err := executor.NewPlan(configs, tuple)     // tuple from package segment
//	pool := executor.NewPool(factory, tuple, plan.MaxVUs)
//	err = pool.Init(ctx, plan.MaxPlannedVUs, runtime.NumCPU())
//	// ... setup() ...
//	sched := executor.NewScheduler(plan, pool, observer)
//	err = sched.Run(ctx, time.Now()) // or the --start-at time; cancel ctx to abort
//
// Nothing on the per-iteration path allocates or takes a lock: iteration
// numbers come from atomic counters, the Iteration passed to RunIteration
// is reused per VU, and arrival-rate starts are handed to idle VUs by value
// over an unbuffered channel.
package executor
