package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/internal/sysmem"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

const seedUsage = `usage: buzzload seed [flags] SCENARIO.toml

Seeds the relay the scenario's [target] names: provisions its communities
(target.community_host_template) through the operator API with create_only,
creates every channel (kind 9007), adds the members of private channels
(kind 9000, at most 100 per event), then posts the history, the deep threads
and the hot thread. Run it once per run_id before 'buzzload run' and its
shards. A rerun adds nobody new and posts nothing twice.

The operator key is read from the environment variable target.operator_key_env
names (default BUZZLOAD_OPERATOR_KEY), else from target.operator_key_file. It
is needed only with a host template and is never printed.

A scenario without target.ws_url and target.http_url runs against the embedded
relay, which 'buzzload run' starts and seeds itself, so seed refuses it.

A relay that answers nothing but quota rejections (HTTP 429, "rate-limited:
quota exceeded") for --throttle-timeout ends the seed with a message that says
it was throttled; --deadline bounds the whole seed. Both exit 1.

Progress goes to stderr, the summary (or --json) to stdout.
Exit status: 0 when the relay accepted every planned post, 1 when not (or the
seed failed, was throttled or ran past its deadline), 2 for usage errors, 104
for an invalid scenario file or a missing operator key, 111 when the relay
does not answer NIP-11 before anything is sent.

flags:
`

// progressInterval is how often a long phase prints its progress line.
const progressInterval = 2 * time.Second

// seedCmd runs `buzzload seed`.
func seedCmd(ctx context.Context, args []string, env cliEnv) int {
	const name = "buzzload seed"
	fs := pflag.NewFlagSet("seed", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	jsonOut := fs.Bool("json", false, "print the result as JSON on stdout instead of the summary")
	quiet := fs.BoolP("quiet", "q", false, "print no progress lines on stderr")
	deadline := fs.Duration("deadline", time.Hour, "give up when the whole seed takes longer (0: no deadline)")
	throttleTimeout := fs.Duration("throttle-timeout", 5*time.Minute, "give up when the relay answers only quota rejections (429) for this long (0: never)")
	sc, code, ok := loadScenarioArgs(name, seedUsage, fs, args, env)
	if !ok {
		return code
	}
	var op *nostr.Keys
	if sc.Target.CommunityHostTemplate != "" {
		k, err := sc.OperatorKey(envLookup(env.Env))
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: operator key: %s\n", name, termtext.Lines(err.Error()))
			return configerr.Exit
		}
		op = k
	}
	ctx, stop := signalContext(ctx, name, env)
	defer stop()
	if code, ok := reachable(ctx, name, sc, env); !ok {
		return code
	}
	pl := newProgressLine(env.Stderr, "seed", *quiet)
	defer pl.stop()
	tt := *throttleTimeout
	if tt <= 0 {
		tt = -1 // seed.Options: negative means never; 0 would mean its default
	}
	res, err := seed.Seed(ctx, sc, seed.Options{Operator: op, Progress: pl.update, Deadline: *deadline, ThrottleTimeout: tt})
	pl.stop()
	return finish(name, env, *jsonOut, res, err,
		func(r *seed.Result) { printSeedSummary(env.Stdout, sc, r) },
		func(r *seed.Result) bool { return !r.OK() })
}

// finish prints a seed or teardown result (as JSON or as its summary) and
// turns it into the exit status: 1 when the command failed, its result says
// it did, or there is no result at all.
func finish[R any](name string, env cliEnv, jsonOut bool, res *R, err error, summary func(*R), failed func(*R) bool) int {
	if res == nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return 1
	}
	if jsonOut {
		if e := writeJSON(env.Stdout, res); e != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", name, e)
			return 1
		}
	} else {
		summary(res)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return 1
	}
	if failed(res) {
		return 1
	}
	return 0
}

// loadScenarioArgs parses flags and the one scenario argument shared by
// seed and teardown. ok false means return code now.
func loadScenarioArgs(name, usageText string, fs *pflag.FlagSet, args []string, env cliEnv) (sc *scenario.Scenario, code int, ok bool) {
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(env.Stdout, usageText)
		fmt.Fprint(env.Stdout, fs.FlagUsages())
		return nil, 0, false
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return nil, 2, false
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.Stderr, "%s: want exactly one scenario file, got %d arguments\nRun '%s --help' for usage.\n", name, fs.NArg(), name)
		return nil, 2, false
	}
	sc, err = scenario.Load(fs.Arg(0))
	if err == nil {
		err = sc.CheckMemory(sysmem.Available())
	}
	if err != nil {
		// Invalid configuration: 104 whichever command met it (issue 47 item 3).
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return nil, configerr.Exit, false
	}
	if sc.Embedded() {
		fmt.Fprintf(env.Stderr, "%s: %s: %v\n", name, fs.Arg(0), seed.ErrEmbedded)
		return nil, 2, false
	}
	// The same identities as the run's: the same secret mixed in.
	if _, err := sc.SetIdentitySecret(envLookup(env.Env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: identity secret: %s\n", name, termtext.Lines(err.Error()))
		return nil, configerr.Exit, false // a malformed key: invalid configuration
	}
	if err := sc.SetFederatedIdentity(envLookup(env.Env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", name, termtext.Lines(err.Error()))
		return nil, configerr.Exit, false
	}
	if !sc.IdentitiesSecret() && sc.SharedTarget() {
		fmt.Fprintf(env.Stderr, "%s: warning: %s\n", name, scenario.NoSecretWarning)
	}
	return sc, 0, true
}

// envLookup is os.LookupEnv over a KEY=VALUE list (the last one wins).
func envLookup(environ []string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
}

// signalContext cancels ctx on SIGINT/SIGTERM, saying so on stderr.
func signalContext(ctx context.Context, name string, env cliEnv) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-env.Signals:
			fmt.Fprintf(env.Stderr, "%s: %v received, stopping\n", name, s)
			cancel()
		case <-done:
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() { once.Do(func() { close(done); cancel() }) }
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progressLine prints "seed: posts 120/1200" on stderr: at once when a
// phase completes, otherwise at most every progressInterval and at least
// that often while a phase is under way (a throttled seed can sit still).
type progressLine struct {
	w      io.Writer
	prefix string
	quiet  bool

	mu      sync.Mutex
	last    seed.Progress
	printed time.Time
	shown   seed.Progress
	stopped bool
	done    chan struct{}
	once    sync.Once
}

func newProgressLine(w io.Writer, prefix string, quiet bool) *progressLine {
	p := &progressLine{w: w, prefix: prefix, quiet: quiet, done: make(chan struct{})}
	if !quiet {
		go p.tick()
	}
	return p
}

func (p *progressLine) update(pr seed.Progress) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = pr
	if pr.Done == pr.Total && pr.Total > 0 || time.Since(p.printed) >= progressInterval {
		p.printLocked()
	}
}

func (p *progressLine) printLocked() {
	if p.stopped || p.last.Phase == "" || p.last == p.shown {
		return
	}
	fmt.Fprintf(p.w, "%s: %s %d/%d\n", p.prefix, p.last.Phase, p.last.Done, p.last.Total)
	p.shown, p.printed = p.last, time.Now()
}

func (p *progressLine) tick() {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if time.Since(p.printed) >= progressInterval {
				p.printLocked()
			}
			p.mu.Unlock()
		}
	}
}

func (p *progressLine) stop() {
	p.once.Do(func() {
		close(p.done)
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
	})
}

// maxPrintedRefusals bounds the refusals the summary lists (--json has them all, up to 1000).
const maxPrintedRefusals = 20

func printSeedSummary(w io.Writer, sc *scenario.Scenario, r *seed.Result) {
	fmt.Fprintf(w, "seed %s (run_id %s) in %v\n", sc.File, r.RunID, r.Duration.Round(time.Millisecond))
	byStatus := map[string]int{}
	for _, c := range r.Communities {
		byStatus[c.Status]++
	}
	fmt.Fprintf(w, "communities: %d (%s)\n", len(r.Communities), statusList(byStatus, "created", "existed", "unmanaged", "failed"))
	for _, c := range r.Communities {
		if c.Host == "" {
			continue
		}
		line := fmt.Sprintf("  %-40s %s", c.Host, c.Status)
		if c.CommunityID != "" {
			line += "  " + c.CommunityID
		}
		if c.Error != "" {
			line += "  " + c.Error
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "channels:    %s\n", countsLine(r.Channels, "created", "already there"))
	if r.Members.Planned > 0 {
		fmt.Fprintf(w, "members:     %s; %d kind-9000 events\n", countsLine(r.Members, "added", "already members"), r.MemberEvents)
		if r.RelayMembershipRequired {
			fmt.Fprintf(w, "relay members: %s (the relay requires NIP-43 relay membership; kind 9030)\n", countsLine(r.RelayMembers, "added", "already members"))
		}
		if r.MemberTagsApplied != "" {
			fmt.Fprintf(w, "             the relay applies %s of a kind-9000; member lists read back and completed one per event\n", r.MemberTagsApplied)
		}
	} else {
		fmt.Fprintln(w, "members:     none (open channels: seeded identities join nothing)")
	}
	fmt.Fprintf(w, "posts:       %s\n", countsLine(r.Posts, "posted", "already there"))
	if len(r.Refusals) > 0 {
		fmt.Fprintln(w, "refused:")
		for i, rf := range r.Refusals {
			if i == maxPrintedRefusals {
				fmt.Fprintf(w, "  ... and %d more (--json lists them)\n", len(r.Refusals)-i+r.RefusalsOmitted)
				break
			}
			fmt.Fprintf(w, "  %s\n", rf)
		}
	}
	if r.OK() {
		fmt.Fprintf(w, "ok: the relay accepted all %d planned posts\n", r.Posts.Planned)
	} else {
		fmt.Fprintf(w, "FAILED: %d of %d planned posts accepted\n", r.Posts.Settled(), r.Posts.Planned)
	}
}

func countsLine(c seed.Counts, created, existing string) string {
	s := fmt.Sprintf("%d planned: %d %s, %d %s", c.Planned, c.Created, created, c.Existing, existing)
	if c.Refused > 0 {
		s += fmt.Sprintf(", %d refused", c.Refused)
	}
	if c.Skipped > 0 {
		s += fmt.Sprintf(", %d not sent", c.Skipped)
	}
	return s
}

// statusList renders counts in a fixed order, leaving out zeros.
func statusList(m map[string]int, order ...string) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	for k, v := range m {
		found := false
		for _, o := range order {
			found = found || o == k
		}
		if !found && v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, k))
		}
	}
	return strings.Join(parts, ", ")
}

// reachable checks, before seed or teardown sends anything, that the
// deployment answers NIP-11 (GET / with Accept: application/nostr+json at
// http_url, dialled at connect_addr), so a dead relay reads as "relay
// down" (exit 111, as run's preflight) instead of a failed seed after
// every post was tried.
func reachable(ctx context.Context, name string, sc *scenario.Scenario, env cliEnv) (int, bool) {
	tgt := preflight.DeploymentTarget(sc)
	timeout := 10 * time.Second
	if sc.Target.ConnectTimeoutSecs > 0 {
		timeout = scenario.Secs(sc.Target.ConnectTimeoutSecs)
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Timeout: timeout})
	if err == nil {
		var doc map[string]any
		r := h.NIP11(ctx, "preflight", &doc)
		if r.Outcome == relayclient.OutcomeOK || r.Outcome == relayclient.OutcomeThrottled {
			return 0, true // a quota answer is an answer: the seed's own throttle handling takes over
		}
		err = errors.New(r.Error)
	}
	fmt.Fprintf(env.Stderr, "%s: the relay at %s does not answer NIP-11: %s\n%s: stopped before sending anything: the target is unreachable (exit %d)\n",
		name, termtext.Clean(tgt.HTTPURL), termtext.Lines(err.Error()), name, ExitUnreachable)
	return ExitUnreachable, false
}
