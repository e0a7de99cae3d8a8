package desktop

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// HumanConfig is one desktop human of a scenario, named like
// modules/models's Config.
type HumanConfig struct {
	Scenario *scenario.Scenario // validated, target URLs set
	Global   int                // a desktop human's global index
	Sink     relayclient.Sink   // nil drops every Result
	// Rand is the activity schedule's random source; nil derives it from
	// run_id and Global (models.NewRand).
	Rand *rand.Rand
	// Users is the ramp step's users, for the co-members; 0 = largest step.
	Users float64
	// CoMemberLimit bounds the co-members; 0 = the scenario's
	// desktop.co_member_limit. Presence watches the first 256 of them
	// (sorted); profiles and statuses read them all.
	CoMemberLimit int
	// LiveOnlyScope, when above 0, overrides the scenario's
	// desktop.live_only_scope (Params.LiveOnlyScope); 0 keeps the scenario's.
	LiveOnlyScope int
	// PubKey maps a global index to its pubkey; nil derives it
	// (Scenario.Keys). A process running many clients should pass a cache:
	// deriving costs a scalar multiplication per co-member.
	PubKey        func(g int) string
	Transport     http.RoundTripper
	LocalAddr     string
	Header        http.Header
	BeforeConnect func(ctx context.Context) error
}

// ConfigFor resolves the desktop client of human global index g: its
// identity, community endpoint, channels, co-members, and the scenario's
// [desktop] keys, with the first renewal's phase drawn from (run_id, g).
func ConfigFor(hc HumanConfig) (Config, error) {
	sc := hc.Scenario
	if sc == nil {
		return Config{}, fmt.Errorf("desktop: HumanConfig.Scenario is required")
	}
	info, ok := sc.Client(hc.Global)
	if !ok || info.Kind != scenario.KindDesktop {
		return Config{}, fmt.Errorf("desktop: global index %d is not a desktop human", hc.Global)
	}
	p, err := ModelParams(sc, hc.Global)
	if err != nil {
		return Config{}, err
	}
	ep := sc.Endpoint(info.Community)
	cfg := Config{
		Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr, LocalAddr: hc.LocalAddr, Identity: ep.Identity},
		Keys:   sc.Keys(hc.Global), Sink: hc.Sink, Transport: hc.Transport, Header: hc.Header,
		ConnectTimeout: scenario.Secs(sc.Target.ConnectTimeoutSecs), BeforeConnect: hc.BeforeConnect,
		RootMarker: scenario.RootMarker(sc.RunID),
	}
	for _, ch := range sc.MemberChannels(hc.Global) {
		cfg.Channels = append(cfg.Channels, sc.ChannelID(ch))
	}
	limit := hc.CoMemberLimit
	if limit <= 0 {
		limit = sc.Desktop.CoMemberLimitOrDefault()
	}
	users := hc.Users
	if users <= 0 {
		users = sc.PeakUsers()
	}
	pub := hc.PubKey
	if pub == nil {
		pub = sc.PubKey
	}
	g := hc.Global
	cfg.LoadCoMembers = func() []string {
		ms := sc.CoMembers(g, users, limit)
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = pub(m)
		}
		return out
	}
	p.Channels = cfg.Channels
	if hc.LiveOnlyScope > 0 {
		p.LiveOnlyScope = hc.LiveOnlyScope
	}
	cfg.Params = p
	return cfg, nil
}

// ModelParams resolves the model's Params of desktop human g from the
// scenario's [desktop] keys: its renewal phase and reconnect jitter drawn
// from (run_id, g). Channels and Presence are the caller's (they need the
// member's channel ids and co-members). modules/plan simulates the model
// from the same Params, so a plan and a run make the same decisions.
func ModelParams(sc *scenario.Scenario, g int) (Params, error) {
	p, err := ParamsFrom(sc.Desktop)
	if err != nil {
		return Params{}, err
	}
	p.RenewalPhase = RenewalPhase(sc.RunID, g)
	s1, s2 := models.SeedFor(sc.RunID, g)
	p.Jitter = rand.New(rand.NewPCG(s1^0x6465736b746f70, s2)).Float64 // its own stream: the model runs on its own goroutine
	return p, nil
}

// RenewalPhase is client g's first-renewal phase in (0, 1]: deterministic
// per run and client, spread evenly over a population.
func RenewalPhase(runID string, g int) float64 {
	h := sha256.Sum256([]byte("buzzload/v1\x00desktop-renewal\x00" + runID + "\x00" + strconv.Itoa(g)))
	const n = 1 << 20
	return float64(binary.BigEndian.Uint64(h[:8])%n+1) / n
}

// Human is a desktop human: the desktop client's subscriptions and reads,
// and beside them, on each session's socket, the shared activity schedule
// of the basic human (presence, typing, messages, reactions, session end).
type Human struct {
	cfg    Config
	client *Client
	act    *models.Activity
	sink   *graceSink
}

// NewHuman prepares desktop human hc.Global.
func NewHuman(hc HumanConfig) (*Human, error) {
	cfg, err := ConfigFor(hc)
	if err != nil {
		return nil, err
	}
	rng := hc.Rand
	if rng == nil {
		rng = models.NewRand(hc.Scenario.RunID, hc.Global)
	}
	h := &Human{cfg: cfg, sink: &graceSink{inner: hc.Sink}}
	h.act = models.NewActivity(hc.Scenario, hc.Global, cfg.Keys, rng, h.sink)
	return h, nil
}

// PubKey is the human's public key.
func (h *Human) PubKey() string { return h.cfg.Keys.PubKey() }

// Run runs the human until stop ends (see Session for the shutdown); its
// error says why it could not run or was cancelled at the end of the grace.
func (h *Human) Run(stop, grace context.Context) error {
	end := h.Session(stop, grace)
	if end.Reason == models.EndStopped {
		return nil
	}
	return fmt.Errorf("desktop human: %s: %w", end.Reason, end.Err)
}

// Session runs the human until stop ends: one call spans all its
// connections (the desktop client reconnects, renews and ticks on its own).
// At the stop, pending EOSE waits and desktop reads are abandoned without
// being recorded, a connect under way finishes within its timeout, and the
// activity's publishes settle on the open socket within grace (nil: their
// own deadlines). If grace ends first, what is still in flight is recorded
// as an "unfinished at stop" error and the end is models.EndCancelled, an
// unexpected exit like the basic human's.
func (h *Human) Session(stop, grace context.Context) (end models.End) {
	defer func() {
		if p := recover(); p != nil {
			end = models.End{Reason: models.EndExited, Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	if stop.Err() != nil {
		return models.End{Reason: models.EndStopped}
	}
	if grace == nil {
		grace = context.WithoutCancel(stop)
	}
	sink := h.sink
	sink.ended.Store(false)
	sink.aborted.Store(false)
	unhook := context.AfterFunc(grace, func() {
		if models.Aborted(grace) {
			sink.aborted.Store(true) // cut at once by the abort, not by the grace
		} else {
			sink.ended.Store(true)
		}
	})
	defer unhook()
	var (
		mu      sync.Mutex
		halt    context.CancelFunc
		running sync.WaitGroup
	)
	endSession := func() {
		mu.Lock()
		if halt != nil {
			halt()
			halt = nil
		}
		mu.Unlock()
	}
	act := h.act
	cfg := h.cfg
	cfg.Sink = sink
	cfg.OnEvent = func(ev *nostr.EventView, at time.Time, live bool) {
		act.Observe(ev)
		if live {
			models.RecordDeliver(sink, ev, at)
		}
	}
	var c *Client
	cfg.OnSession = func(conn *relayclient.Conn) {
		endSession()
		if conn == nil {
			return
		}
		ctx, cancel := context.WithCancel(stop)
		mu.Lock()
		halt = cancel
		mu.Unlock()
		running.Add(1)
		go func() {
			defer running.Done()
			if act.Run(ctx, ctx, conn) && ctx.Err() == nil {
				c.EndSession() // the schedule's session end: an ordinary reconnect
			}
		}()
	}
	cfg.Drain = func(grace context.Context) {
		endSession()
		running.Wait()
		act.Settle(grace)
	}
	var err error
	if c, err = New(cfg); err != nil {
		return models.End{Reason: models.EndExited, Err: err}
	}
	h.client = c
	c.Run(stop, grace)
	endSession()
	running.Wait()
	if sink.aborted.Load() {
		return models.End{Reason: models.EndInterrupted, Err: errors.New("the run was aborted")}
	}
	if sink.ended.Load() {
		return models.End{Reason: models.EndCancelled, Err: errors.New("operations still in flight when the shutdown grace ended")}
	}
	return models.End{Reason: models.EndStopped}
}

// graceSink reads Results as models.CutShort does once the grace has
// ended or the run was aborted; desktop EOSE waits and reads are dropped at
// the stop before they get here.
type graceSink struct {
	inner   relayclient.Sink
	ended   atomic.Bool
	aborted atomic.Bool // the run was aborted: cut short is pending, "cut by the abort"
}

func (s *graceSink) Record(r relayclient.Result) {
	if s.inner == nil {
		return
	}
	s.inner.Record(models.CutShort(r, s.aborted.Load(), s.ended.Load()))
}

// Unwrap is the sink it passes Results on to (relayclient.Wrapper).
func (s *graceSink) Unwrap() relayclient.Sink { return s.inner }
