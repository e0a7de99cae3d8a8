// Package extension is the `k6/x/buzz` JS module: it turns JS calls into Go
// calls on modules/ (scenario, seed, models, relayclient, relay) and every
// relay operation into samples. It is exactly the surface an xk6 extension
// would register; cmd/buzzload/run.go registers one per run and closes it
// when the run is over:
//
//	buzz := extension.New(extension.Options{LookupEnv: lookup})
//	reg.Register(extension.ImportPath, buzz)
//	... run ...
//	buzz.Close() // stops the embedded relay
//
// # JS API
//
//	import buzz from "k6/x/buzz";
//	const sc = buzz.load("./local-smoke.toml"); // init code; --shard i/n applies
//	export const options = sc.options({ ...overrides });
//	export function setup() { return sc.setup(); }
//	export function human() { sc.human(); }      // also desktop(), agent(), hotAuthor(); run() picks by scenario name
//	export function teardown() { sc.teardown(); }
//	export function handleSummary(data) { return sc.report(data, { json: "buzz-report.json" }); }
//
// buzz.load(path, {shard, desktopMode}) parses a scenario file
// (modules/scenario; path relative to the script, read like open()) once
// per run and options; every VU shares it. Validation errors name the file,
// key and line. shard "i/n" runs shard i of n (buzz-loadgen's --shard; each
// kind dealt round-robin over the shards, scenario.Shard): run the same
// script n times with --shard i/n, which is the default shard of every
// buzz.load without one. desktopMode "legacy" or "current" replaces the file's
// [desktop].mode after parsing (undefined, null or "" keep it; any other
// value is an init error, exit 107), so one TOML compares the two desktop
// apps: buzz.load('./local-desktop.toml', { desktopMode: __ENV.DESKTOP_MODE }).
// sc.desktopMode is the mode in effect; the report's desktop_mode names it
// when the scenario has desktop humans.
//
// sc.options(overrides) returns k6 options: one ramping-vus scenario per
// population with clients (humans, desktop, agents, hot_authors; exec human,
// desktop, agent, hotAuthor), startVUs 0, two stages per ramp step
// (scenario.Stages: stage 2i is step i's ramp, 2i+1 its hold, both named
// step-<i>), gracefulStop and gracefulRampDown 15 s
// (the shutdown grace); the abort rules as thresholds (BuildOptions); a
// summaryTrendStats with p(99); setupTimeout 10m for large seeds. Overrides
// replace top-level keys; `scenarios` and `thresholds` merge by name (null
// removes one). sc.thresholds(ops, delayAbortEval) gives whole-run
// thresholds by the same limits for custom (paced) scenarios; sc.limits(),
// sc.steps() and sc.peak() expose the limits, the step plan and the client
// counts of the largest step (this shard).
//
// sc.setup() seeds the scenario with modules/seed (idempotent: a rerun adds
// nothing) and returns a small summary object (setup data). In a
// distributed run every instance runs setup() (k6-operator#223), so only one
// seeds: the instance whose execution segment starts at 0 (or shard 0);
// the others wait, bounded by setupTimeout less 10 s, until the fixture is
// complete on the shared relay and verify it (seed.WaitComplete), writing
// nothing (SeedRole; sc.setup({role: "seed"|"wait", waitTimeout: "5m"})
// overrides). Against the embedded relay every instance seeds its own. sc.teardown()
// stops the embedded relay (it does not delete communities: that is
// `buzzload teardown`). sc.report(data, {json}) in handleSummary prints the
// per-step, per-operation report and writes it as JSON (default
// buzz-report.json; "" for none; Options.ReportPath, run --report, wins);
// it stops the embedded relay as well. Its printed k6 summary folds the
// per-op abort thresholds into one line per rule and window
// (foldthresholds.go; {foldThresholds: false} prints each, {k6Summary:
// false} none), and the report ends with its checks (checks.go): the
// expected errors, the relay's logs, the post-run sweep and the durability
// audit among them. The module writes the file itself,
// so one that cannot be written fails the run (Module.FinishReports, which
// also writes --report when no sc.report ran). Per operation the report
// keeps every distinct error text normalised (NormaliseError) with its
// count, the 10 most frequent and "other"; the windows of
// Options.ReportInterval (windows.go: printed to Options.Console, kept in
// the JSON, downsampled at MaxWindows); and, apart and not judged, what
// settled in the warm-up (Options.Warmup or [abort] warmup_secs: no
// buzz_op_* samples are pushed for it, so no threshold sees it).
//
// # Preflight
//
// Before the first seed (or the wait for another instance's seed) and
// before the first client of a shard started with --no-setup, the module
// checks the target once (preflight.go): NIP-11 answers, a WebSocket
// connects and authenticates as community 0's fixture owner and, when
// seeding, the operator API answers the operator key. Before a seed the
// checks go to the deployment (ws_url and http_url as written, its
// community hosts may not exist yet); clients check community 0's host. A
// failure is a *preflight.Error naming what and where; it stops the run
// (Options.Abort) and Module.PreflightError reports it, which `buzzload
// run` turns into exit 111.
//
// Low-level API, for custom and paced scripts (each call records samples
// under the op name the script gives, default the buzz-loadgen name):
//
//	sc.client(kind, i) | sc.client(g)   → {global, kind, index, community, pubkey, channels}
//	sc.channelId(community, index)      → the channel's h-tag value
//	sc.hotRoot()                        → the seeded hot-thread root's id (after setup)
//	const s = sc.connect(kind, i)       → authenticated socket of that client ({ok, error} on failure)
//	s.publish({kind, content, tags, timed}, {op, timeout_ms})  → {ok, outcome, error, duration_ms, id}
//	s.subscribeUntilEose(filters, {op, timeout_ms})            → {ok, events, ...}; the REQ is closed at EOSE
//	s.close()                                                  (also closed when the iteration ends)
//	const h = sc.http(kind, i)          → NIP-98 signed HTTP as that client
//	h.query(filters, {op}) → {ok, events}, h.events(event, {op}) → {ok, id, accepted}, h.count(filters, {op}) → {ok, count}
//
// timed: true adds the send-time tag, so live subscribers record deliver.
//
// # Clients and VUs
//
// One iteration runs one client session (connect, work until the session
// ends, the stop or a failure); the next iteration reconnects after the
// client's backoff. A desktop human (modules/models/desktop.Human: the app's
// subscriptions and reads plus the shared activity) reconnects by itself, so
// its one iteration lasts the run. The k-th VU to start in a population scenario in this
// process takes local slot k; with an execution segment the slot is
// GlobalIndex(k) of the segment's stripe (from the VU's test options), so
// instances never share a client; the slot indexes Scenario.Clients(kind,
// peak users, shard), the clients in the order the ramp adds them. Ramps
// never lower users, so a VU keeps its client for the run. Use either
// shards or execution segments, not both.
//
// The stop is the end of the last hold (the scenario's start from
// State.ScenarioStart plus Scenario.Duration()); the grace is
// the iteration's context, which the runner cancels at the end of
// gracefulStop (15 s), or at once when the run is aborted. At the stop a
// client starts nothing new; operations under way run to their own
// deadlines; what the grace cuts short is recorded as "unfinished at stop"
// errors and the client as a cancelled exit. A client that cannot be built
// (more VUs than the scenario has clients, a bad index) is one "exited" exit
// and its VU idles to the stop. Clients cut off when the run is aborted
// (abortOnFail, test.abort(), a signal: no grace, before the stop or within
// the grace) are reported as interrupted, not as exits; what the abort cut
// is pending "cut by the abort" (models.Aborted tells an abort, a cancelled
// grace, from a grace that ran out). The report ends its timeline at the
// abort: cut operations count where it fell, that window is not judged.
//
// # Metrics (docs/architecture.md)
//
// buzz_op_duration (Trend, ms; successes only), buzz_op_failed (Rate: 1 per
// error, 0 per success; throttled and pending are not in it),
// buzz_op_throttled (Counter: HTTP 429 and "rate-limited: quota exceeded"),
// buzz_op_pending (Gauge: operations of a step still in flight at its end,
// emitted as they settle), all tagged op, step and the VU's tags (scenario,
// ...); buzz_clients (Gauge, kind: clients in a session) and
// buzz_client_exits (Counter, kind, reason: cancelled or exited). The step
// of a sample is the ramp step its settlement falls in, by the clock from the
// scenario's start; after the last hold it is "shutdown"; the seed's
// operations are step "setup".
//
// # Abort rules and exit codes
//
// The abort limits become thresholds (abortOnFail, exit 99), judged as
// buzz-loadgen judges them: per step, over its ramp and hold together, over
// every client, at the end of the hold. Both stages of step i are named
// step-<i>, and the runner judges consecutive stages named alike as one
// window (window 'stage'); the windows follow the first population
// scenario's stage events (all populations' steps coincide) and hold every
// population's samples: p99 of every op at most max_p99_ms, the error rate
// of every op but deliver at most max_error_rate, no client exit. So the exit
// code and the report judge the same numbers, and a spike in a ramp stops
// the run only when it breaks a limit over the whole step. A script that
// removes the first population (scenarios: {humans: null}) moves the
// windows to the next. What settles after the last hold is judged over the
// whole run by the same limits (buzz_op_duration{op:X,step:shutdown}, ...),
// and buzz_client_exits count<=0 over the whole run makes a client cancelled
// at the end of the grace fail the run with exit 99 (a threshold, not
// test.fail()).
//
// # Embedded relay
//
// A scenario that names no relay runs against modules/relay, started
// lazily on first use (once per run, on 127.0.0.1 with a free port, Buzz's
// defaults plus any BUZZ_* variable of `buzzload relay`) and stopped by
// sc.teardown(), sc.report() or Module.Close, whichever comes first. The run's copy of the scenario
// gets the relay's URLs, connect_addr at its listen address and the host
// template c{n}.<run_id>.localhost (EmbeddedHostTemplate), so each community
// is its own host, provisioned by the seed through the operator API as on a
// real deployment.
package extension
