package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/internal/sysmem"
	"github.com/buzzload/buzzload/modules/capacity"
	"github.com/buzzload/buzzload/modules/genmeter"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

const capacityUsage = `usage: buzzload capacity [flags] SCENARIO.toml

Searches how many people the deployment holds at its service level
([capacity] of the scenario, docs/scenario.md; docs/guide.md "Capacity"):
probes of the scenario's population scaled to a number of people (humans and
agents in the file's proportions), rising geometrically from start_users
until one fails, then bisected to the resolution, the edge searched again
'repeats' times for a 95 % interval. Each probe is a 'buzzload run' of its own
(ramp, settle, then judged over probe_secs against [capacity].slo, or the
[abort] limits). A probe the relay's quotas or its limiter answered, or whose
generator had less than 1.5x headroom, is invalid: retried, never a failure.
Without a [target], the search starts a 'buzzload relay' of its own, in its
own process (the generator's CPU is then its own).

Prints one line per probe and the answer:
  capacity: holds N people of this profile (95 % interval [a, b]); limited by <op> <stat> at <value>

Exit status: 0 an answer (a number, or "at least max_users"), 2 usage errors,
104 an invalid scenario, 113 no answer (the generator was the limit, probes
kept being invalid, or the time budget ran out before the edge was found).

flags:
`

// ExitNoAnswer is capacity's exit when the search found no number.
const ExitNoAnswer = 113

// capacityReport is the JSON report of a search.
type capacityReport struct {
	Scenario string          `json:"scenario"`
	RunID    string          `json:"run_id"`
	SLO      []string        `json:"slo"`
	Config   capacityConfig  `json:"config"`
	Capacity capacity.Answer `json:"capacity"`
	Text     string          `json:"text"`
	Secs     float64         `json:"secs"`
	CPU      capacityCPU     `json:"cpu"`
}

type capacityConfig struct {
	StartUsers int     `json:"start_users"`
	MaxUsers   int     `json:"max_users"`
	Resolution float64 `json:"resolution"`
	Repeats    int     `json:"repeats"`
	MaxMinutes float64 `json:"max_minutes"`
	RampSecs   float64 `json:"ramp_secs"`
	SettleSecs float64 `json:"settle_secs"`
	ProbeSecs  float64 `json:"probe_secs"`
}

func capacityCmd(ctx context.Context, args []string, env cliEnv) int {
	const name = "buzzload capacity"
	fs := pflag.NewFlagSet("capacity", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repPath := fs.String("report", "", "write the search's JSON report (capacity: users, ci95, limited_by, probes) to this file")
	htmlPath := fs.String("report-html", "", "write the search as an HTML page (the probes' people, the limiting statistic against its limit)")
	dir := fs.String("dir", "", "keep the probes' scenario files, reports and logs in this directory (default: a temporary one, removed)")
	var relayLogs []string
	fs.StringArrayVar(&relayLogs, "relay-log", nil, "passed to every probe's run (a log that cannot be read makes a probe invalid)")
	var runners []string
	fs.StringSliceVar(&runners, "runners", nil, "send each probe's shards to these `buzzload capacity-worker`s (URLs, comma-separated; one shard each), the token from $"+WorkerTokenEnv+"; their results merged here")
	shards := fs.Int("shards", 1, "run each probe as this many runner processes on this machine (execution segments of one test, started together, merged exactly), as a distributed run does")
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(env.Stdout, capacityUsage+fs.FlagUsages())
		return 0
	}
	if err != nil || fs.NArg() != 1 {
		if err == nil {
			err = fmt.Errorf("want exactly one scenario file, got %d arguments", fs.NArg())
		}
		fmt.Fprintf(env.Stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return 2
	}
	if *shards < 1 || *shards > 64 {
		fmt.Fprintf(env.Stderr, "%s: --shards %d: want 1 to 64\n", name, *shards)
		return 2
	}
	var token string
	if len(runners) > 0 {
		if fs.Changed("shards") {
			fmt.Fprintf(env.Stderr, "%s: --shards and --runners are exclusive (one shard per runner)\n", name)
			return 2
		}
		token, _ = envLookup(env.Env)(WorkerTokenEnv)
		if token == "" {
			fmt.Fprintf(env.Stderr, "%s: --runners: $%s must hold the workers' token\n", name, WorkerTokenEnv)
			return 2
		}
		*shards = len(runners)
	}
	path := fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return configerr.Exit
	}
	sc, err := scenario.Parse(path, src)
	if err == nil {
		err = sc.CheckMemory(sysmem.Available())
	}
	var slos []capacity.SLO
	if err == nil {
		slos, err = capacity.SLOs(sc)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return configerr.Exit
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "buzzload-capacity-"); err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
			return 1
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintf(env.Stderr, "%s: --dir: %v\n", name, err)
		return 2
	}
	ctx, stop := signalContext(ctx, name, env)
	defer stop()
	if sc.Embedded() {
		fmt.Fprintln(env.Stdout, "capacity: each probe against a fresh buzzload relay of its own, in its own process (probes independent, the generator's CPU its own)")
	}
	cp := sc.Capacity
	cfg := capacity.Config{Start: max(cp.StartUsers, capacity.MinUsers(sc.Population)), Max: cp.MaxUsers,
		Resolution: cp.Resolution, Repeats: cp.Repeats, Growth: cp.Growth}
	ph := capacity.Phases{RampSecs: cp.RampSecs, SettleSecs: cp.SettleSecs, ProbeSecs: cp.ProbeSecs}
	search := capacity.New(cfg)
	start := time.Now()
	var runnersCPU cpuTally
	deadline := start.Add(time.Duration(cp.MaxMinutes * float64(time.Minute)))
	var last time.Duration // the last probe's length: the next one's estimate
	for i := 1; ; i++ {
		users, ok := search.Next()
		if !ok {
			break
		}
		est := max(last, time.Duration((ph.RampSecs+ph.SettleSecs+ph.ProbeSecs)*float64(time.Second)))
		if time.Now().Add(est).After(deadline) {
			search.Stop(fmt.Sprintf("the time budget (max_minutes %g) ran out", cp.MaxMinutes))
			break
		}
		if ctx.Err() != nil {
			search.Stop("interrupted")
			break
		}
		t0 := time.Now()
		p := probeOnce(ctx, self, env.Env, work, i, src, sc, users, ph, probeRun{relayLogs: relayLogs, shards: *shards, runners: runners, token: token, cpu: &runnersCPU}, slos)
		last = time.Since(t0)
		p.Users, p.StartS, p.Secs = users, t0.Sub(start).Seconds(), last.Seconds()
		search.Observe(p)
		fmt.Fprintln(env.Stdout, probeLine(i, p, capacity.Scale(sc.Population, users)))
	}
	a := search.Answer()
	fmt.Fprintf(env.Stdout, "capacity: %s\n", termtext.Lines(a.Text()))
	cpu := newCapacityCPU(genmeter.ProcessCPU(), runnersCPU.total())
	if cpu.Share != nil {
		fmt.Fprintf(env.Stdout, "capacity: the search's own CPU %.2f s, %.2f %% of its probes' runners (%.1f s)\n",
			cpu.CoordinatorS, 100**cpu.Share, cpu.RunnersS)
	}
	rep := capacityReport{Scenario: path, RunID: sc.RunID, Capacity: a, Text: a.Text(), Secs: time.Since(start).Seconds(), CPU: cpu,
		Config: capacityConfig{StartUsers: cfg.Start, MaxUsers: cfg.Max, Resolution: cfg.Resolution, Repeats: cfg.Repeats,
			MaxMinutes: cp.MaxMinutes, RampSecs: ph.RampSecs, SettleSecs: ph.SettleSecs, ProbeSecs: ph.ProbeSecs}}
	for _, s := range slos {
		k := s.Metric
		if s.Op != "" {
			k += "{op:" + s.Op + "}"
		}
		rep.SLO = append(rep.SLO, k+": "+s.Expr.Source)
	}
	if *repPath != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*repPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --report: %v\n", name, err)
			return 1
		}
	}
	if *htmlPath != "" {
		if err := os.WriteFile(*htmlPath, capacity.HTML(path, a, rep.SLO), 0o644); err != nil {
			fmt.Fprintf(env.Stderr, "%s: --report-html: %v\n", name, err)
			return 1
		}
	}
	if len(a.Knees) == 0 {
		return ExitNoAnswer
	}
	return 0
}

// capacityKeyEnv carries the search's own relay's operator key to the
// probes (generated, never printed or written).
const capacityKeyEnv = "BUZZLOAD_CAPACITY_OPERATOR_KEY"

func probeLine(i int, p capacity.Probe, pp capacity.People) string {
	state := "pass"
	switch {
	case !p.Valid:
		state = "invalid"
	case !p.Pass:
		state = "fail"
	}
	line := fmt.Sprintf("  probe %d: %d people (%d humans, %d agents), %.0fs: %s", i, p.Users, pp.Humans, pp.Agents, p.Secs, state)
	switch {
	case !p.Valid || !p.Pass:
		line += " — " + p.Reason
	case p.Limit != nil:
		line += " — nearest its limit: " + p.Limit.String()
	}
	return termtext.Lines(line)
}

// probeOnce runs one probe; a scenario without a [target] gets a fresh
// relay process for it, so no probe inherits another's state or backlog
// (a search measured on one relay drifted: the same people passed at 5 ms
// early on and failed at 500 ms after an overloaded probe).
func probeOnce(ctx context.Context, self string, env []string, work string, i int, src []byte, sc *scenario.Scenario, users int,
	ph capacity.Phases, pr probeRun, slos []capacity.SLO) capacity.Probe {
	if !sc.Embedded() {
		return runProbe(ctx, self, env, work, i, src, sc, users, ph, nil, pr, slos)
	}
	r, err := startRelayProcess(ctx, self, env)
	if err != nil {
		return capacity.Probe{Reason: "starting the probe's relay: " + err.Error()}
	}
	defer r.stop()
	tgt := &capacity.Target{WSURL: "ws://" + r.addr, HTTPURL: "http://" + r.addr, ConnectAddr: r.addr,
		HostTemplate: extension.EmbeddedHostTemplate(sc.RunID), OperatorKeyEnv: capacityKeyEnv}
	childEnv := append(append([]string(nil), env...), capacityKeyEnv+"="+r.key)
	pr.key = r.key
	return runProbe(ctx, self, childEnv, work, i, src, sc, users, ph, tgt, pr, slos)
}

// probeRun is how a probe's runs are made: the relay logs every run
// scans, and how many shards run it.
type probeRun struct {
	relayLogs []string
	shards    int
	runners   []string // remote workers: one shard each
	token     string   // theirs
	key       string   // the search's own relay's operator key (remote shards need it)
	cpu       *cpuTally
}

// runProbe runs one probe as a `buzzload run` of its own (or shards of
// one, merged) and judges it from its report.
func runProbe(ctx context.Context, self string, env []string, work string, i int, src []byte, sc *scenario.Scenario, users int,
	ph capacity.Phases, tgt *capacity.Target, pr probeRun, slos []capacity.SLO) capacity.Probe {
	base := filepath.Join(work, fmt.Sprintf("probe-%02d-%d", i, users))
	toml, err := capacity.ProbeTOML(src, sc.Population, users, ph, tgt)
	if err != nil {
		return capacity.Probe{Reason: "writing the probe's scenario: " + err.Error()}
	}
	if err := os.WriteFile(base+".toml", toml, 0o600); err != nil {
		return capacity.Probe{Reason: err.Error()}
	}
	common := []string{"run", "-q", "--address", "", "--report-interval", "0s"}
	for _, l := range pr.relayLogs {
		common = append(common, "--relay-log", l)
	}
	if pr.shards <= 1 {
		runErr := runLogged(ctx, self, env, base+".log", pr.cpu, append(common, "--report", base+".json", base+".toml")...)
		return judgeFile(base+".json", false, runErr, base+".log", slos)
	}
	// Shards: execution segments of one test, started together, each
	// writing its result; merged exactly (as a distributed run is).
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	bound := func(k int) string {
		switch k {
		case 0:
			return "0"
		case pr.shards:
			return "1"
		}
		return fmt.Sprintf("%d/%d", k, pr.shards)
	}
	var seq []string
	for k := 0; k <= pr.shards; k++ {
		seq = append(seq, bound(k))
	}
	results := make([]string, pr.shards)
	errs := make(chan error, pr.shards)
	// A shard that ends without its result ends the probe: the others
	// would wait for a fixture that shard was to seed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for s := range pr.shards {
		results[s] = fmt.Sprintf("%s.shard%d.json", base, s)
		if len(pr.runners) > 0 {
			req := probeRequest{TOML: string(toml), Segment: bound(s) + ":" + bound(s+1), Sequence: strings.Join(seq, ","), StartAt: at, OperatorKey: pr.key}
			go func() { errs <- remoteShard(ctx, pr.runners[s], pr.token, results[s], req) }()
			continue
		}
		args := append(append([]string(nil), common...), "--execution-segment", bound(s)+":"+bound(s+1),
			"--execution-segment-sequence", strings.Join(seq, ","), "--start-at", at, "--result", results[s], base+".toml")
		go func() {
			log := fmt.Sprintf("%s.shard%d.log", base, s)
			err := runLogged(ctx, self, env, log, pr.cpu, args...)
			if _, statErr := os.Stat(results[s]); statErr != nil {
				errs <- fmt.Errorf("shard %d wrote no result (%v: %s)", s, err, lastLine(log))
				return
			}
			errs <- nil
		}()
	}
	var shardErr error
	for range pr.shards {
		if err := <-errs; err != nil && shardErr == nil {
			shardErr = err
			cancel()
		}
	}
	if shardErr != nil {
		return capacity.Probe{Reason: "a shard: " + shardErr.Error()}
	}
	mergeErr := runLogged(ctx, self, env, base+".merge.log", nil, append([]string{"merge", "-o", base + ".merged.json"}, results...)...)
	return judgeFile(base+".merged.json", true, mergeErr, base+".merge.log", slos)
}

// runLogged runs self with args, its output in logPath; its CPU goes to
// tally (nil: not counted).
func runLogged(ctx context.Context, self string, env []string, logPath string, tally *cpuTally, args ...string) error {
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	err = cmd.Run()
	tally.add(cmd)
	return err
}

// judgeFile judges a probe from its report file (a Buzz report, or a
// merged result file's "buzz").
func judgeFile(path string, result bool, runErr error, logPath string, slos []capacity.SLO) capacity.Probe {
	raw, err := os.ReadFile(path)
	if err != nil {
		why := "the probe's run wrote no report"
		if runErr != nil {
			why += " (" + runErr.Error() + ": " + lastLine(logPath) + "; its log: " + logPath + ")"
		}
		return capacity.Probe{Reason: why, Report: path}
	}
	if result {
		var f struct {
			Buzz json.RawMessage `json:"buzz"`
		}
		if err := json.Unmarshal(raw, &f); err != nil || len(f.Buzz) == 0 {
			return capacity.Probe{Reason: "the merged result has no Buzz report (" + logPath + ")", Report: path}
		}
		raw = f.Buzz
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return capacity.Probe{Reason: "the probe's report: " + err.Error()}
	}
	p := capacity.Judge(&rep, slos)
	p.Report = path
	return p
}

// relayProcess is a `buzzload relay` the search started.
type relayProcess struct {
	cmd  *exec.Cmd
	addr string
	key  string
}

// startRelayProcess starts `buzzload relay` on a free loopback port with a
// fresh operator key (in its environment only) and waits for its
// listening line.
func startRelayProcess(ctx context.Context, self string, env []string) (*relayProcess, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	key := hex.EncodeToString(b)
	cmd := exec.Command(self, "relay", "--listen", "127.0.0.1:0")
	cmd.Env = append(append([]string(nil), env...), "BUZZ_OPERATOR_SECRET="+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
	}()
	select {
	case l := <-lines:
		addr, ok := strings.CutPrefix(l, "buzzload relay listening on ")
		if !ok {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("unexpected first line %q", l)
		}
		return &relayProcess{cmd: cmd, addr: addr, key: key}, nil
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, errors.New("the relay did not start within 20 s")
}

func (r *relayProcess) stop() {
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
}

// lastLine is a log's last non-empty line (at most 300 bytes of it).
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := lines[len(lines)-1]
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}
