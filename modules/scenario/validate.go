package scenario

import (
	"fmt"
	"github.com/buzzload/buzzload/modules/nostr"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/localaddr"
)

// Limits beyond which a scenario is refused, so counts and durations stay
// far from overflow. MaxClients matches k6's VU ceiling.
const (
	MaxClients  = 100_000_000
	MaxChannels = 100_000_000
	MaxSecs     = 100_000_000 // about three years
	MaxThread   = 100         // the relay rejects deeper threads
)

type checker struct{ probs []Problem }

func (c *checker) add(key, format string, args ...any) {
	c.probs = append(c.probs, Problem{Key: key, Reason: fmt.Sprintf(format, args...)})
}

func num(v float64) string {
	if math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// intAtLeast: v ≥ lo.
func (c *checker) intAtLeast(key string, v, lo int) {
	if v < lo {
		c.add(key, "%d is below %d", v, lo)
	}
}

// intRange: lo ≤ v ≤ hi; hiWhat names hi when it comes from another key.
func (c *checker) intRange(key string, v, lo, hi int, hiWhat string) {
	switch {
	case v < lo:
		c.add(key, "%d is below %d", v, lo)
	case v > hi:
		c.add(key, "%d is above %s", v, hiWhat)
	}
}

func (c *checker) finite(key string, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.add(key, "%s is not a finite number", num(v))
		return false
	}
	return true
}

// floatAtLeast: v ≥ lo (and ≤ MaxSecs when secs).
func (c *checker) floatAtLeast(key string, v, lo float64, secs bool) {
	if !c.finite(key, v) {
		return
	}
	switch {
	case v < lo:
		c.add(key, "%s is below %s", num(v), num(lo))
	case secs && v > MaxSecs:
		c.add(key, "%s is above %d", num(v), MaxSecs)
	}
}

// positive: v > 0.
func (c *checker) positive(key string, v float64, secs bool) {
	if !c.finite(key, v) {
		return
	}
	switch {
	case v <= 0:
		c.add(key, "%s is not above 0", num(v))
	case secs && v > MaxSecs:
		c.add(key, "%s is above %d", num(v), MaxSecs)
	}
}

// fraction: 0 ≤ v ≤ 1.
func (c *checker) fraction(key string, v float64) {
	if !c.finite(key, v) {
		return
	}
	switch {
	case v < 0:
		c.add(key, "%s is below 0", num(v))
	case v > 1:
		c.add(key, "%s is above 1", num(v))
	}
}

// zeroOrAtLeast: v is 0 (disabled) or ≥ lo.
func (c *checker) zeroOrAtLeast(key string, v, lo float64) {
	if !c.finite(key, v) {
		return
	}
	switch {
	case v < 0:
		c.add(key, "%s is below 0", num(v))
	case v > 0 && v < lo:
		c.add(key, "%s is below %s (0 disables it)", num(v), num(lo))
	case v > MaxSecs:
		c.add(key, "%s is above %d", num(v), MaxSecs)
	}
}

var (
	envNameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	runIDRe    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	hostRunRe  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	templateRe = regexp.MustCompile(`\{[^}]*\}`)
)

// validate collects every rule a parsed scenario breaks. Each rule says why
// the scenario could not be scheduled or would not mean what it says.
func (s *Scenario) validate() []Problem {
	c := &checker{}
	s.validateTarget(c)
	s.validateShape(c)
	s.validatePopulation(c)
	s.validateBehaviour(c)
	s.validateRamp(c)
	c.positive("abort.max_p99_ms", s.Abort.MaxP99Ms, false)
	c.fraction("abort.max_error_rate", s.Abort.MaxErrorRate)
	c.floatAtLeast("abort.warmup_secs", s.Abort.WarmupSecs, 0, true)
	c.positive("abort.generator_max_lag_ms", s.Abort.GeneratorMaxLagMs, false)
	c.intRange("verify.sample", s.Verify.Sample, 0, MaxVerifySample, strconv.Itoa(MaxVerifySample))
	c.positive("verify.timeout_secs", s.Verify.TimeoutSecs, true)
	c.fraction("verify.ledger_sample", s.Verify.LedgerSample)
	c.intRange("verify.max_lost", s.Verify.MaxLost, 0, math.MaxInt32, "2147483647")
	c.intRange("verify.visibility_every", s.Verify.VisibilityEvery, 0, math.MaxInt32, "2147483647")
	c.positive("verify.drill_recover_within_secs", s.Verify.DrillRecoverWithinSecs, true)
	c.floatAtLeast("verify.max_drift", s.Verify.MaxDrift, 0, false)
	s.validateDrills(c)
	s.validateCapacity(c)
	for _, p := range expect.Check("expect", s.Expect) {
		c.add(p.Key, "%s", p.Msg)
	}
	return c.probs
}

func (s *Scenario) validateTarget(c *checker) {
	switch {
	case s.RunID == "":
		c.add("run_id", "is required")
	case !runIDRe.MatchString(s.RunID):
		c.add("run_id", "must be 1-128 letters, digits, '.', '_' or '-'")
	}
	t := s.Target
	checkURL := func(key, raw string, schemes ...string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != schemes[0] && u.Scheme != schemes[1]) {
			c.add(key, "is not a %s:// or %s:// URL", schemes[0], schemes[1])
			return
		}
		if u.User != nil {
			c.add(key, "must not carry credentials")
		}
	}
	if t.WSURL != "" {
		checkURL("target.ws_url", t.WSURL, "ws", "wss")
	}
	if t.HTTPURL != "" {
		checkURL("target.http_url", t.HTTPURL, "http", "https")
	}
	if t.WSURL != "" && t.HTTPURL == "" {
		c.add("target.http_url", "is required when target.ws_url is set")
	}
	if t.HTTPURL != "" && t.WSURL == "" {
		c.add("target.ws_url", "is required when target.http_url is set")
	}
	if t.ConnectAddr != "" {
		if h, _, err := net.SplitHostPort(t.ConnectAddr); err != nil || h == "" {
			c.add("target.connect_addr", "is not host:port")
		} else if reason, _ := checkHost(t.ConnectAddr); reason != "" {
			c.add("target.connect_addr", "%s", reason)
		}
	}
	if tmpl := t.CommunityHostTemplate; tmpl != "" {
		bad := false
		for _, ph := range templateRe.FindAllString(tmpl, -1) {
			if ph != "{run}" && ph != "{n}" {
				c.add("target.community_host_template", "has unknown placeholder %s (only {run} and {n})", ph)
				bad = true
			}
		}
		if !bad && s.Shape.Communities > 1 && !strings.Contains(tmpl, "{n}") {
			c.add("target.community_host_template", "has no {n}, so all %d communities would share one host", s.Shape.Communities)
		}
		runBad := strings.Contains(tmpl, "{run}") && s.RunID != "" && !hostRunRe.MatchString(s.RunID)
		if !bad && runBad {
			c.add("run_id", "must be lower-case letters, digits and '-' (a host name label) when the host template uses {run}")
		}
		if !bad {
			host0 := s.CommunityHost(0)
			reason, hasPort := checkHost(host0)
			if reason != "" && !runBad { // a bad run_id is reported once, above
				c.add("target.community_host_template", "expands to a host that %s", reason)
			} else if err := nostr.ValidateCanonicalHost(host0); err != nil && !runBad {
				// Buzz provisions only canonical hosts (provision_community →
				// validate_host on the raw host): a template that merely
				// normalises to one would be refused at seed time.
				c.add("target.community_host_template", "expands to %q, which Buzz refuses to provision: %v; write it as %q",
					host0, err, nostr.NormalizeHost(host0))
			}
			if hasPort && t.ConnectAddr != "" {
				c.add("target.community_host_template", "has a port while target.connect_addr is set (the override maps host names, so HTTP would ignore the port)")
			}
		}
	}
	c.positive("target.connect_timeout_secs", t.ConnectTimeoutSecs, true)
	if t.LocalIPs != "" {
		if _, err := localaddr.Parse(t.LocalIPs); err != nil {
			c.add("target.local_ips", "%v", err)
		}
	}
	if t.OperatorKeyEnv != "" && !envNameRe.MatchString(t.OperatorKeyEnv) {
		c.add("target.operator_key_env", "is not an environment variable name")
	}
}

func (s *Scenario) validateShape(c *checker) {
	sh := s.Shape
	c.intRange("shape.communities", sh.Communities, 1, MaxChannels, strconv.Itoa(MaxChannels))
	c.intRange("shape.channels_per_community", sh.ChannelsPerCommunity, 1, MaxChannels, strconv.Itoa(MaxChannels))
	if sh.Communities >= 1 && sh.ChannelsPerCommunity >= 1 && sh.Communities > MaxChannels/sh.ChannelsPerCommunity {
		c.add("shape.channels_per_community", "%d communities of %d channels is above %d channels", sh.Communities, sh.ChannelsPerCommunity, MaxChannels)
	}
	c.intAtLeast("shape.history_messages_per_channel", sh.HistoryMessagesPerChannel, 0)
	c.intAtLeast("shape.thread_roots_per_channel", sh.ThreadRootsPerChannel, 0)
	c.intRange("shape.thread_depth", sh.ThreadDepth, 0, MaxThread, strconv.Itoa(MaxThread)+" (the relay rejects deeper threads)")
	c.intRange("shape.wide_channels", sh.WideChannels, 0, max(sh.ChannelsPerCommunity, 0),
		fmt.Sprintf("shape.channels_per_community %d", sh.ChannelsPerCommunity))
	c.intAtLeast("shape.seed_concurrency", sh.SeedConcurrency, 1)
}

func (s *Scenario) validatePopulation(c *checker) {
	p := s.Population
	c.intRange("population.humans", p.Humans, 0, MaxClients, strconv.Itoa(MaxClients))
	c.intRange("population.agents", p.Agents, 0, MaxClients, strconv.Itoa(MaxClients))
	regular := max(s.Shape.ChannelsPerCommunity-max(s.Shape.WideChannels, 0), 0)
	regWhat := fmt.Sprintf("the %d regular channels of a community (channels_per_community - wide_channels)", regular)
	c.intRange("population.channels_per_member", p.ChannelsPerMember, 0, regular, regWhat)
	c.fraction("population.wide_member_fraction", p.WideMemberFraction)
	if p.WideActivityShare != nil {
		c.fraction("population.wide_activity_share", *p.WideActivityShare)
	}
	sum := 0.0
	for i, t := range p.Tiers {
		key := fmt.Sprintf("population.tiers[%d]", i)
		c.fraction(key+".fraction", t.Fraction)
		c.intRange(key+".channels", t.Channels, 0, regular, regWhat)
		sum += t.Fraction
	}
	if sum > 1+1e-9 {
		c.add("population.tiers", "fractions sum to %s, above 1", num(sum))
	}
	c.positive("population.connect_rate_per_sec", p.ConnectRatePerSec, false)
	c.intRange("population.humans_per_vu", p.HumansPerVU, 1, MaxHumansPerVU, strconv.Itoa(MaxHumansPerVU))
	if p.Humans == 0 && p.Agents == 0 && s.HotThread.Authors == 0 {
		c.add("population", "humans, agents and hot_thread.authors are all 0, so no client would run")
	}
}

func (s *Scenario) validateBehaviour(c *checker) {
	h := s.Human
	c.intAtLeast("human.history_limit", h.HistoryLimit, 0)
	c.fraction("human.thread_reply_fraction", h.ThreadReplyFraction)
	c.floatAtLeast("human.mean_session_secs", h.MeanSessionSecs, 0, true)
	c.floatAtLeast("human.presence_interval_secs", h.PresenceIntervalSecs, 1, true)
	c.floatAtLeast("human.typing_per_hour", h.TypingPerHour, 0, false)
	c.floatAtLeast("human.messages_per_hour", h.MessagesPerHour, 0, false)
	c.floatAtLeast("human.reactions_per_hour", h.ReactionsPerHour, 0, false)

	a := s.Agent
	c.zeroOrAtLeast("agent.presence_interval_secs", a.PresenceIntervalSecs, 1)
	c.floatAtLeast("agent.query_interval_secs", a.QueryIntervalSecs, 0, true)
	c.floatAtLeast("agent.events_per_hour", a.EventsPerHour, 0, false)
	c.floatAtLeast("agent.observer_frames_per_hour", a.ObserverFramesPerHour, 0, false)
	tn := a.Turn
	c.floatAtLeast("agent.turn.per_hour", tn.PerHour, 0, false)
	c.positive("agent.turn.mean_secs", tn.MeanSecs, true)
	c.positive("agent.turn.typing_secs", tn.TypingSecs, true)
	c.positive("agent.turn.frame_secs", tn.FrameSecs, true)
	c.intRange("agent.turn.frame_bytes", tn.FrameBytes, 1, 65535, "65535 (the NIP-44 plaintext limit)")
	c.intAtLeast("agent.turn.reads", tn.Reads, 0)

	ht := s.HotThread
	c.intAtLeast("hot_thread.seed_replies", ht.SeedReplies, 0)
	c.intRange("hot_thread.authors", ht.Authors, 0, MaxClients, strconv.Itoa(MaxClients))
	c.floatAtLeast("hot_thread.replies_per_hour", ht.RepliesPerHour, 0, false)
	c.floatAtLeast("hot_thread.fetches_per_hour", ht.FetchesPerHour, 0, false)

	d := s.Desktop
	c.fraction("desktop.fraction", d.Fraction)
	if d.Mode != ModeCurrent && d.Mode != ModeLegacy {
		c.add("desktop.mode", "must be %q or %q", ModeCurrent, ModeLegacy)
	}
	c.intAtLeast("desktop.windows", d.Windows, 0)
	c.intAtLeast("desktop.threads", d.Threads, 0)
	c.floatAtLeast("desktop.tick_secs", d.TickSecs, 1, true)
	c.floatAtLeast("desktop.backstop_secs", d.BackstopSecs, 0, true)
	c.floatAtLeast("desktop.renewal_secs", d.RenewalSecs, 0, true)
	c.intRange("desktop.live_only_scope", d.LiveOnlyScope, 1, MaxLiveOnlyScope,
		strconv.Itoa(MaxLiveOnlyScope)+" (the desktop app's scope)")
	c.intRange("desktop.co_member_limit", d.CoMemberLimit, 1, MaxCoMemberLimit, strconv.Itoa(MaxCoMemberLimit))
}

func (s *Scenario) validateRamp(c *checker) {
	if len(s.Ramp) == 0 {
		c.add("ramp", "needs at least one [[ramp]] step")
		return
	}
	total := 0.0
	for i, st := range s.Ramp {
		key := fmt.Sprintf("ramp[%d]", i)
		c.positive(key+".users", st.Users, false)
		c.floatAtLeast(key+".ramp_secs", st.RampSecs, 0, true)
		c.floatAtLeast(key+".hold_secs", st.HoldSecs, 0, true)
		if st.RampSecs == 0 && st.HoldSecs == 0 {
			c.add(key, "ramp_secs and hold_secs are both 0, so the step could not be judged")
		}
		if i > 0 && st.Users < s.Ramp[i-1].Users {
			c.add(key+".users", "%s is below ramp[%d].users %s (clients are only ever added, so users never decrease)",
				num(st.Users), i-1, num(s.Ramp[i-1].Users))
		}
		total += st.RampSecs + st.HoldSecs
	}
	if total > MaxSecs {
		c.add("ramp", "lasts %s s, above %d", num(total), MaxSecs)
	}
	peak := s.PeakUsers()
	if peak > 0 && !math.IsInf(peak, 0) && !math.IsNaN(peak) {
		n := float64(max(s.Population.Humans, 0)+max(s.Population.Agents, 0)+max(s.HotThread.Authors, 0)) * peak
		if n > MaxClients {
			c.add(fmt.Sprintf("ramp[%d].users", len(s.Ramp)-1), "%s gives %s clients, above %d", num(peak), num(math.Round(n)), MaxClients)
		}
	}
}

// Warnings lists settings that are valid but probably not what was meant.
func (s *Scenario) Warnings() []string {
	var w []string
	add := func(key, format string, args ...any) {
		w = append(w, s.File+": "+key+": "+fmt.Sprintf(format, args...))
	}
	if s.Target.ConnectTimeoutSecs >= 15 {
		add("target.connect_timeout_secs", "%s is not below the 15 s shutdown grace, so a stalled connect at the stop is cancelled (failing the run) instead of timing out", num(s.Target.ConnectTimeoutSecs))
	}
	if s.Target.ConnectAddr != "" && s.Target.CommunityHostTemplate == "" {
		add("target.connect_addr", "has no effect without target.community_host_template")
	}
	if s.Shape.WideChannels == 0 && s.Population.WideMemberFraction > 0 {
		add("population.wide_member_fraction", "has no effect with shape.wide_channels = 0")
	}
	if s.Shape.WideChannels == 0 && s.Population.WideActivityShare != nil {
		add("population.wide_activity_share", "has no effect with shape.wide_channels = 0")
	}
	if s.Desktop.Fraction > 0 && s.Population.Humans == 0 {
		add("desktop.fraction", "has no effect with population.humans = 0")
	}
	w = append(w, s.connectBurstWarnings()...)
	w = append(w, s.ShortRunWarnings(s.Duration())...)
	prev := 0
	for i, p := range s.Steps() {
		added := p.Clients.Total() - prev
		prev = p.Clients.Total()
		// ramp_secs 0 asks for "as fast as the connect rate allows".
		if s.Population.ConnectRatePerSec <= 0 || added <= 0 || s.Ramp[i].RampSecs == 0 {
			continue
		}
		need := float64(added) / s.Population.ConnectRatePerSec
		if need > s.Ramp[i].RampSecs {
			add(fmt.Sprintf("ramp[%d].ramp_secs", i), "%s s is shorter than the %s s that %d new clients take at population.connect_rate_per_sec %s",
				num(s.Ramp[i].RampSecs), num(math.Ceil(need)), added, num(s.Population.ConnectRatePerSec))
		}
	}
	return w
}

// ShortRunWarnings names every interval that shapes the run but is more
// than half of run (the scenario's length, after run -d): its event may
// happen once or never, so the run does not measure what the key asks for
// (the soak tool warns when its duration is under twice a perturbation
// interval: ../shared/seeds/soak-tool-load_test.zh.md). Only intervals of
// clients the scenario runs count.
func (s *Scenario) ShortRunWarnings(run time.Duration) []string {
	var w []string
	check := func(key string, secs float64, what string) {
		if secs > 0 && 2*Secs(secs) > run {
			w = append(w, fmt.Sprintf("%s: %s: %s s is more than half the run (%s s): %s", s.File, key, num(secs), num(run.Seconds()), what))
		}
	}
	peak := s.CountsAt(s.PeakUsers(), Shard{})
	if peak[KindDesktop] > 0 {
		check("desktop.tick_secs", s.Desktop.TickSecs, "fewer than two desktop recovery ticks fit")
		check("desktop.backstop_secs", s.Desktop.BackstopSecs, "fewer than two current-mode backstops fit")
		check("desktop.renewal_secs", s.Desktop.RenewalSecs, "fewer than two renewals per desktop client fit")
	}
	if peak.Humans() > 0 {
		check("human.mean_session_secs", s.Human.MeanSessionSecs, "fewer than two mean sessions fit, so reconnect churn is barely measured")
		check("human.presence_interval_secs", s.Human.PresenceIntervalSecs, "fewer than two presence heartbeats per human fit")
	}
	if peak[KindAgent] > 0 {
		if s.Agent.Turn.PerHour > 0 {
			check("agent.turn.mean_secs", s.Agent.Turn.MeanSecs, "fewer than two mean agent turns fit, so replies and clean-up are barely measured")
		}
		check("agent.presence_interval_secs", s.Agent.PresenceIntervalSecs, "fewer than two presence heartbeats per agent fit")
	}
	if s.Abort.WarmupSecs > 0 && Secs(s.Abort.WarmupSecs) >= run {
		w = append(w, fmt.Sprintf("%s: abort.warmup_secs: %s s covers the whole run (%s s): nothing is judged", s.File, num(s.Abort.WarmupSecs), num(run.Seconds())))
	}
	return w
}

// Buzz's admission limits a basic human's connect must fit
// (docs/buzz-protocol.md §0): 50 REQ/COUNT/EVENT frames per 5 s per key
// (connection.rs enforce_ws_admission), at most 128 #h values per REQ
// (req.rs MAX_EXPLICIT_CHANNEL_VALUES) and 1024 subscriptions per
// connection (req.rs MAX_SUBSCRIPTIONS). modules/models paces by them.
const (
	WSAdmissionFrames      = 50
	WSAdmissionWindowSecs  = 5
	MaxChannelValuesPerREQ = 128
	MaxSubscriptions       = 1024
)

// connectBurstWarnings warns when the basic human with the most channels
// sends more connect-time REQs (a live one per channel, mentions in groups
// of 128, presence, a history one per channel) than Buzz admits in one
// window — buzzload paces them, so its subscriptions take that long — or
// holds more live subscriptions than one connection may.
func (s *Scenario) connectBurstWarnings() []string {
	most := 0
	for i := 0; i < s.Population.Humans; i++ {
		if s.IsDesktop(i) {
			continue
		}
		most = max(most, len(s.MemberChannels(s.GlobalIndex(KindHuman, i))))
	}
	if most == 0 {
		return nil
	}
	live := most + (most+MaxChannelValuesPerREQ-1)/MaxChannelValuesPerREQ + 1
	frames := live
	if s.Human.HistoryLimit > 0 {
		frames += most
	}
	var w []string
	if frames > WSAdmissionFrames {
		w = append(w, fmt.Sprintf("%s: population: a basic human in %d channels sends %d REQs at connect; Buzz admits %d frames per %d s per key, so buzzload paces them over about %d s",
			s.File, most, frames, WSAdmissionFrames, WSAdmissionWindowSecs, (frames/(WSAdmissionFrames-10))*WSAdmissionWindowSecs))
	}
	if live > MaxSubscriptions {
		w = append(w, fmt.Sprintf("%s: population: a basic human in %d channels holds %d live subscriptions, above Buzz's %d per connection: the relay refuses the rest",
			s.File, most, live, MaxSubscriptions))
	}
	return w
}
