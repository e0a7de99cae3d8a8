package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/lazyjson"
	"github.com/buzzload/buzzload/modules/audit"
	"github.com/buzzload/buzzload/modules/genmeter"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/localaddr"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// loaded is one scenario file as every VU of the run shares it.
type loaded struct {
	// preflightSockets: the preflight's WebSocket, once it connected
	// (guarded by preMu).
	preflightSockets int64
	// acked: events the relay acknowledged, by kind (relaymetricsrun.go).
	acked  ackedKinds
	gen    *genmeter.Meter // the generator's CPU per step
	genOut genOut          // where the meter's samples go
	m      *Module
	base   *scenario.Scenario
	shard  scenario.Shard
	plan   []scenario.StepPlan

	targetOnce sync.Once
	run        *scenario.Scenario // base with the embedded relay's URLs when it names none
	targetErr  error

	clientsMu sync.Mutex
	clients   [scenario.NumKinds][]int

	claimsMu sync.Mutex
	claims   map[string]*atomic.Int64 // k6 scenario name → next local slot

	agg  *report.Aggregator
	recs recIndexes // the sinks' shared (op, step) lookups (sink.go)
	// expected counts the errors the [[expect]] rules matched (nil: no rules).
	expected *report.ExpectedTally
	// acks are the acknowledged events for the durability audit (nil:
	// [verify] sample = 0); durability is the audit's outcome, once run.
	acks       *audit.AckLog
	unacked    *audit.UnackedLog // the events it never acknowledged (nil with acks)
	auditOnce  sync.Once
	durability *report.DurabilityReport
	unackedRep *report.UnackedReport
	swept      *report.SweepReport // the post-run sweep, once run
	// ledger is the delivery ledger (nil: [verify] ledger_sample = 0),
	// vis its visibility probe, visRep what it measured.
	ledger *ledgerRun
	drills *drillRun
	vis    *audit.Visibility
	visRep *report.VisibilityReport
	// identityWarning says the identities carry no secret on a shared relay.
	identityWarning string
	win             *report.Windows // the report intervals
	winStop         chan struct{}   // closed by stopWindows
	winStopOnce     sync.Once
	winMu           sync.Mutex
	genDone         chan struct{} // closed when the generator's watcher wrote its last samples (nil until it starts)

	preMu   sync.Mutex
	preDone bool        // a preflight passed
	preOK   atomic.Bool // preDone, read without the lock on the low-level API's path
	preErr  error       // a preflight failed (sticky)
	// relayLimits are the bounds in force, from the preflight's NIP-11.
	relayLimits []report.RelayLimit

	seedMu   sync.Mutex
	seedDone bool
	seedRes  *SetupResult
	seedErr  error

	warnOnce sync.Once

	optsOnce  sync.Once
	opts      *k6options.Options
	optsWarn  []string
	optsDocMu sync.Mutex
	optsDocs  map[string]*lazyjson.Doc // options() of later VUs, by overrides JSON

	hotMu   sync.Mutex
	hotRoot string

	pacerOnce sync.Once
	pace      *pacer

	keysOnce sync.Once
	keyMemo  *scenario.KeyMemo

	localIPsOnce sync.Once
	localIPs     localaddr.List
	localByVU    bool // the list is k6's localIPs option: handed out by VU
}

// keys is the run's memo of its clients' keys: each derived once, as a
// client's own keys or as someone's presence peer or co-member.
func (l *loaded) keys() *scenario.KeyMemo {
	l.keysOnce.Do(func() { l.keyMemo = scenario.NewKeyMemo(l.base) })
	return l.keyMemo
}

// localIP is the source address of client g's connections, the client
// run by VU vu ("" = the kernel's choice). target.local_ips hands its
// addresses out by client (docs/scenario.md); without it, k6's localIPs
// option (options.localIPs, the config file, K6_LOCAL_IPS, --local-ips)
// hands its out by VU, as k6/http does (localaddr.List.ForVU), so all of a
// VU's traffic leaves from one address. The scenario key wins: it is the
// more specific. Both were validated (scenario, engine), so they parse.
func (l *loaded) localIP(g int, vu uint64, testOptions []byte) string {
	l.localIPsOnce.Do(func() {
		if l.base.Target.LocalIPs != "" {
			l.localIPs, _ = localaddr.Parse(l.base.Target.LocalIPs)
			return
		}
		var o struct {
			LocalIPs string `json:"localIPs"`
		}
		if json.Unmarshal(testOptions, &o) == nil {
			l.localIPs, _ = localaddr.Parse(o.LocalIPs)
			l.localByVU = true
		}
	})
	if !l.localByVU {
		return l.localIPs.At(g)
	}
	if a := l.localIPs.ForVU(vu); a.IsValid() {
		return a.String()
	}
	return ""
}

// pubKey is client g's pubkey, derived once per run (presence peers,
// desktop co-members).
func (l *loaded) pubKey(g int) string { return l.keys().PubKey(g) }

// pacer is the process-wide connect pacing of this scenario:
// population.connect_rate_per_sec, divided among the shards.
func (l *loaded) pacer() *pacer {
	l.pacerOnce.Do(func() {
		rate := l.base.Population.ConnectRatePerSec
		if l.shard.Count > 1 {
			rate /= float64(l.shard.Count)
		}
		l.pace = newPacer(rate)
	})
	return l.pace
}

func newLoaded(m *Module, sc *scenario.Scenario, shard scenario.Shard) *loaded {
	l := &loaded{m: m, base: sc, shard: shard, plan: sc.Steps(), claims: map[string]*atomic.Int64{}}
	l.agg = report.NewAggregator(sc, l.plan)
	l.win, l.winStop = report.NewWindows(l.agg), make(chan struct{})
	l.gen = genmeter.New(len(l.plan))
	l.ledger = l.newLedgerRun()
	l.drills = newDrillRun()
	if l.ledger != nil {
		l.vis = audit.NewVisibility(sc.Verify.VisibilityEvery, l.auditConfig)
	}
	l.acks = audit.NewAckLog(sc.Verify.Sample)
	if l.acks != nil {
		l.unacked = audit.NewUnackedLog()
	}
	return l
}

var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// EmbeddedHostTemplate is the community host template given to a scenario
// that names no relay: every community is its own host on the embedded
// relay (dialled at its listen address), so several communities are real,
// separately provisioned communities. {run} is the run id when it is a host
// label, else a hash of it.
func EmbeddedHostTemplate(runID string) string {
	label := runID
	if !hostLabel.MatchString(label) {
		sum := sha256.Sum256([]byte(runID))
		label = "r" + hex.EncodeToString(sum[:6])
	}
	return "c{n}." + label + ".localhost"
}

// target is the run's copy of the scenario: as written, or aimed at the
// embedded relay (started on first use) when it names no relay.
func (l *loaded) target() (*scenario.Scenario, error) {
	l.targetOnce.Do(func() {
		if !l.base.Embedded() {
			l.run = l.base
			return
		}
		r, err := l.m.embedded()
		if err != nil {
			l.targetErr = err
			return
		}
		cp := *l.base
		u := r.URLs()
		cp.Target.WSURL, cp.Target.HTTPURL = u.WS, u.HTTP
		cp.Target.ConnectAddr = r.Addr()
		cp.Target.CommunityHostTemplate = EmbeddedHostTemplate(cp.RunID)
		cp.AimedAtEmbedded()
		if err := cp.Validate(); err != nil {
			l.targetErr = fmt.Errorf("aiming %s at the embedded relay: %w", l.base.File, err)
			return
		}
		if r.AllowlistOn() {
			// BUZZ_PUBKEY_ALLOWLIST on the embedded relay: the run lists its
			// own identities, as an operator fills Buzz's pubkey_allowlist.
			if err := r.AllowPubkeys(cp.PubKeys()...); err != nil {
				l.targetErr = fmt.Errorf("embedded relay: %w", err)
				return
			}
		}
		l.run = &cp
	})
	return l.run, l.targetErr
}

// clientList is the global indices of kind k this shard runs at the peak,
// in the order the ramp adds them.
func (l *loaded) clientList(k scenario.Kind) []int {
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	if l.clients[k] == nil {
		l.clients[k] = l.base.Clients(k, l.base.PeakUsers(), l.shard)
		if l.clients[k] == nil {
			l.clients[k] = []int{}
		}
	}
	return l.clients[k]
}

// claim hands out the next local slot of a k6 scenario in this process.
func (l *loaded) claim(name string) int64 {
	l.claimsMu.Lock()
	c := l.claims[name]
	if c == nil {
		c = &atomic.Int64{}
		l.claims[name] = c
	}
	l.claimsMu.Unlock()
	return c.Add(1) - 1
}

// stageIndex, stepIndex and stepLabel place a moment on the plan's
// timeline (report.StageIndex).
func (l *loaded) stageIndex(offset time.Duration) int { return report.StageIndex(l.plan, offset) }
func (l *loaded) stepIndex(offset time.Duration) int  { return report.StepIndex(l.plan, offset) }
func (l *loaded) stepLabel(i int) string              { return report.StepLabel(l.plan, i) }

// checkTarget runs the preflight once per run before the first seed or
// client (seeding adds the operator API check; a passed check is not
// repeated). A failure is sticky and stops the run.
func (l *loaded) checkTarget(ctx context.Context, sc *scenario.Scenario, seeding bool, op *nostr.Keys, origin string) error {
	l.preMu.Lock()
	defer l.preMu.Unlock()
	if l.preErr != nil || l.preDone {
		return l.preErr
	}
	pool, err := l.m.httpPool()
	if err != nil {
		return err
	}
	limits, err := preflight.Check(ctx, sc, preflight.Target(sc, seeding), sc.OwnerKeys(0), seeding, pool)
	if err == nil {
		l.relayLimits = limits
		l.preflightSockets = 1 // its WebSocket check: a connection the relay counts, no watcher sees
	}
	if err == nil && seeding && op != nil {
		err = preflight.Operator(ctx, sc, op, origin, pool)
	}
	if err != nil {
		l.preErr = err
		l.m.failPreflight(err)
		return err
	}
	l.preDone = true
	l.preOK.Store(true)
	return nil
}
