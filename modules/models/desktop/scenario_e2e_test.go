package desktop

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/scenario"
)

// The scenario's desktop.live_only_scope reaches the model through
// ConfigFor (the extension builds HumanConfig without it), and
// HumanConfig.LiveOnlyScope, when set, overrides it.
func TestConfigForTakesTheLiveOnlyScopeFromTheScenario(t *testing.T) {
	sc := deskScenario(t, "127.0.0.1:1", "current")
	if sc.Desktop.LiveOnlyScope != scenario.DefaultLiveOnlyScope {
		t.Fatalf("parsed live_only_scope %d, want the default %d", sc.Desktop.LiveOnlyScope, scenario.DefaultLiveOnlyScope)
	}
	g25 := -1
	for i := 0; i < 6 && g25 < 0; i++ {
		if g := sc.GlobalIndex(scenario.KindDesktop, i); len(sc.MemberChannels(g)) == 25 {
			g25 = g
		}
	}
	if g25 < 0 {
		t.Fatal("no desktop human in 25 channels")
	}
	plan := func(hc HumanConfig) string {
		t.Helper()
		cfg, err := ConfigFor(hc)
		if err != nil {
			t.Fatal(err)
		}
		var live []string
		for _, r := range PlanRoutes(cfg.Params.Mode, len(cfg.Params.Channels), true, cfg.Params.LiveOnlyScope) {
			if r.Kind == RouteLive {
				live = append(live, fmt.Sprint(len(r.Channels)))
			}
		}
		return fmt.Sprintf("scope %d live %s", cfg.Params.LiveOnlyScope, strings.Join(live, "+"))
	}
	if got := plan(HumanConfig{Scenario: sc, Global: g25}); got != "scope 128 live 25" {
		t.Errorf("default: %s", got)
	}
	small := *sc
	small.Desktop.LiveOnlyScope = 10
	if got := plan(HumanConfig{Scenario: &small, Global: g25}); got != "scope 10 live 10+10+5" {
		t.Errorf("live_only_scope = 10: %s", got)
	}
	if got := plan(HumanConfig{Scenario: &small, Global: g25, LiveOnlyScope: 2048}); got != "scope 2048 live 25" {
		t.Errorf("HumanConfig override: %s", got)
	}
	if _, err := scenario.Parse("t.toml", []byte("run_id = \"t\"\n"+strings.Replace(
		fmt.Sprintf(deskShape, "current"), "[desktop]\n", "[desktop]\nlive_only_scope = 2048\n", 1))); err != nil {
		t.Errorf("the app's literal 2048 scope is refused: %v", err)
	}
}

// scenarios/local-desktop.toml is the operators' legacy-vs-current
// comparison: it must stay short, run on the embedded relay, turn every
// desktop knob on so ticks, backstops and renewals happen inside the run, and
// mix desktop clients above and below 10 channels. No network: it is parsed
// and planned only.
func TestLocalDesktopScenarioExercisesEveryKnob(t *testing.T) {
	sc, err := scenario.Load("../../../scenarios/local-desktop.toml")
	if err != nil {
		t.Fatal(err)
	}
	if w := sc.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	if sc.Target.WSURL != "" || sc.Target.HTTPURL != "" || sc.Target.CommunityHostTemplate != "" {
		t.Error("it names a relay; it must run on the embedded one")
	}
	if d := sc.Duration(); d > 90*time.Second || d < 30*time.Second {
		t.Errorf("lasts %v, want about a minute", d)
	}
	d := sc.Desktop
	if d.Fraction < 0.5 {
		t.Errorf("desktop.fraction %v is not high", d.Fraction)
	}
	if d.Windows < 1 || d.Threads < 1 {
		t.Errorf("windows %d, threads %d: both must be open", d.Windows, d.Threads)
	}
	// The shortest-lived client starts at the end of the last ramp and
	// lives through the last hold.
	last := sc.Ramp[len(sc.Ramp)-1]
	life := scenario.Secs(last.HoldSecs)
	tick, backstop, renewal := scenario.Secs(d.TickSecs), scenario.Secs(d.BackstopSecs), scenario.Secs(d.RenewalSecs)
	if 3*tick > life {
		t.Errorf("tick %v: fewer than 3 ticks in the shortest client's %v", tick, life)
	}
	// current's items run at the first tick at least backstop after the
	// last run: that tick must fall inside every client's life, and the
	// backstop must exceed a tick or current would tick like legacy.
	if first := time.Duration((backstop+tick-1)/tick) * tick; backstop <= tick || first >= life {
		t.Errorf("backstop %v with tick %v: first backstop tick at %v, want after one tick and within %v", backstop, tick, first, life)
	}
	// The first renewal falls at phase × renewal, phase in (0, 1].
	if renewal <= 0 || renewal >= life {
		t.Errorf("renewal %v: not every client renews within %v", renewal, life)
	}
	relayCap := relay.DefaultConfig().MaxChannelsPerREQ
	if d.LiveOnlyScope < 1 || d.LiveOnlyScope > relayCap {
		t.Errorf("live_only_scope %d: the embedded relay refuses REQs over %d channels", d.LiveOnlyScope, relayCap)
	}

	desk := sc.Clients(scenario.KindDesktop, sc.PeakUsers(), scenario.Shard{})
	if len(desk) < 10 {
		t.Errorf("%d desktop clients at the peak, want at least 10", len(desk))
	}
	var small, large int
	for _, g := range desk {
		cfg, err := ConfigFor(HumanConfig{Scenario: sc, Global: g})
		if err != nil {
			t.Fatalf("client %d: %v", g, err)
		}
		p := cfg.Params
		if p.LiveOnlyScope != d.LiveOnlyScope || p.Tick != tick || p.Backstop != backstop || p.Renewal != renewal {
			t.Errorf("client %d: live-only scope %d, tick %v, backstop %v, renewal %v: not the scenario's desktop keys",
				g, p.LiveOnlyScope, p.Tick, p.Backstop, p.Renewal)
		}
		n := len(p.Channels)
		if n <= BatchSize {
			small++
		} else {
			large++
		}
		for _, mode := range []Mode{ModeLegacy, ModeCurrent} {
			for _, r := range PlanRoutes(mode, n, true, p.LiveOnlyScope) {
				if len(r.Channels) > relayCap {
					t.Errorf("client %d %v: a %v REQ over %d channels, above the relay's %d", g, mode, r.Kind, len(r.Channels), relayCap)
				}
				if r.Kind == RouteLive && n <= BatchSize {
					t.Errorf("client %d %v: live-only route with %d channels", g, mode, n)
				}
			}
		}
	}
	if small == 0 || large == 0 {
		t.Errorf("desktop clients with ≤ %d channels: %d, with more: %d; want both", BatchSize, small, large)
	}
	t.Logf("%d desktop clients: %d in ≤ %d channels, %d in more", len(desk), small, BatchSize, large)

	// The script picks the mode from DESKTOP_MODE (scripts/desktop-compare.sh).
	js, err := os.ReadFile("../../../scenarios/local-desktop.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "buzz.load('./local-desktop.toml', { desktopMode: __ENV.DESKTOP_MODE })") {
		t.Error("local-desktop.js does not load local-desktop.toml with desktopMode from DESKTOP_MODE")
	}
}
