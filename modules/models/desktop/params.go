package desktop

import (
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

// Mode is the desktop app version the model imitates.
type Mode uint8

// The modes (scenario desktop.mode).
const (
	ModeCurrent Mode = iota // after the app's request-volume fixes (default)
	ModeLegacy              // before them
)

func (m Mode) String() string {
	if m == ModeLegacy {
		return scenario.ModeLegacy
	}
	return scenario.ModeCurrent
}

// ParseMode maps the scenario's mode string; "" is current.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", scenario.ModeCurrent:
		return ModeCurrent, nil
	case scenario.ModeLegacy:
		return ModeLegacy, nil
	}
	return 0, fmt.Errorf("desktop: mode %q: want %q or %q", s, scenario.ModeCurrent, scenario.ModeLegacy)
}

// The app's constants (docs/desktop-requests.md §2, §4, §5).
const (
	BatchSize      = 10   // channels per replaying batch or replay
	LiveOnlyScope  = 2048 // channels per current-mode live-only subscription
	ReplayLimit    = 500  // a replay of this many events is cut
	PresenceMax    = 256  // presence authors per subscription
	UnreadChunk    = 128  // channels per unread-repair request
	MaxOlderPages  = 5    // older window pages after the head
	MaxRosterPages = 3    // roster pages (the app keeps at most 1024 rosters)
	ProfileChunk   = 500  // authors per profile read
	StatusChunk    = 100  // authors per status read

	DefaultMaxSetup    = 4                // REQs awaiting EOSE at once
	DefaultEOSETimeout = 10 * time.Second // per REQ
	DefaultProbeWindow = 10 * time.Second // a silence probe's answer window
	DefaultMaxReads    = 6                // HTTP reads in flight
	DefaultReadTimeout = 30 * time.Second // per HTTP request
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
	// HealthySession is how long a session must have lasted for its failure
	// to restart the backoff from the base delay.
	HealthySession = 60 * time.Second

	ColdStartBack = 300 * time.Second // cold-start since = start − 300 s
	ResumeBack    = 960 * time.Second // resumed since = previous end − 960 s
)

// Params are the model's inputs: the scenario's [desktop] keys resolved for
// one client, and the size of its membership. Zero limits take the defaults.
type Params struct {
	Mode     Mode
	Channels []string // joined channel ids, in membership order (wide first)
	// Presence says the client has at least one co-member to watch; without
	// one the presence subscription is not sent (the app sends none).
	Presence bool
	Windows  int // open channel windows (the first Windows channels)
	Threads  int // open threads (thread i lives in channel i mod len(Channels))

	Tick     time.Duration // recovery tick period (> 0)
	Backstop time.Duration // current: each tick item waits this long
	Renewal  time.Duration // identity renewal period; 0 disables
	// RenewalPhase in (0, 1] places the first renewal at RenewalPhase ×
	// Renewal after the start, so a population's renewals spread evenly
	// over the period. 0 means 1.
	RenewalPhase float64

	// LiveOnlyScope is the channels per current-mode live-only REQ
	// (scenario desktop.live_only_scope, default 128); 0 is the app's 2048.
	// Buzz (and the embedded relay by default) refuse more than 128
	// explicit #h values in one REQ, so 2048 only suits a relay without
	// that cap.
	LiveOnlyScope int

	MaxSetup    int           // REQs awaiting EOSE at once
	EOSETimeout time.Duration // per REQ
	ProbeWindow time.Duration // silence probe answer window
	MaxReads    int           // HTTP reads in flight
	BackoffBase time.Duration // first reconnect delay after a failure
	BackoffMax  time.Duration // reconnect delay cap
	// Jitter, when set, returns a uniform draw in [0, 1): each reconnect
	// delay is then drawn from [½, 1) of its ceiling, so clients dropped
	// together do not all come back together. Nil: the ceiling exactly.
	Jitter func() float64
}

// ParamsFrom resolves the scenario's [desktop] keys. Channels, Presence and
// RenewalPhase are the caller's (they depend on the client).
func ParamsFrom(d scenario.Desktop) (Params, error) {
	mode, err := ParseMode(d.Mode)
	if err != nil {
		return Params{}, err
	}
	p := Params{
		Mode: mode, Windows: d.Windows, Threads: d.Threads,
		Tick: scenario.Secs(d.TickSecs), Backstop: scenario.Secs(d.BackstopSecs),
		Renewal: scenario.Secs(d.RenewalSecs), LiveOnlyScope: d.LiveOnlyScope,
	}
	return p, p.validate()
}

func (p *Params) validate() error {
	switch {
	case p.Tick <= 0:
		return fmt.Errorf("desktop: tick %v must be above 0", p.Tick)
	case p.Backstop < 0:
		return fmt.Errorf("desktop: backstop %v must not be negative", p.Backstop)
	case p.Renewal < 0:
		return fmt.Errorf("desktop: renewal %v must not be negative", p.Renewal)
	case p.Windows < 0 || p.Threads < 0:
		return fmt.Errorf("desktop: windows %d and threads %d must not be negative", p.Windows, p.Threads)
	case p.LiveOnlyScope < 0:
		return fmt.Errorf("desktop: live-only scope %d must not be negative", p.LiveOnlyScope)
	case p.RenewalPhase < 0 || p.RenewalPhase > 1:
		return fmt.Errorf("desktop: renewal phase %v is outside (0, 1]", p.RenewalPhase)
	}
	return nil
}

func (p *Params) defaults() {
	if p.MaxSetup <= 0 {
		p.MaxSetup = DefaultMaxSetup
	}
	if p.EOSETimeout <= 0 {
		p.EOSETimeout = DefaultEOSETimeout
	}
	if p.ProbeWindow <= 0 {
		p.ProbeWindow = DefaultProbeWindow
	}
	if p.MaxReads <= 0 {
		p.MaxReads = DefaultMaxReads
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = DefaultBackoffBase
	}
	if p.BackoffMax <= 0 {
		p.BackoffMax = DefaultBackoffMax
	}
	if p.RenewalPhase == 0 {
		p.RenewalPhase = 1
	}
}

// windowCount is how many windows are open: Windows, at most one per channel.
func (p *Params) windowCount() int { return min(p.Windows, len(p.Channels)) }

func (p *Params) threadCount() int {
	if len(p.Channels) == 0 {
		return 0
	}
	return p.Threads
}

// WindowChannel is the channel index of window i.
func WindowChannel(i int) int { return i }

// ThreadChannel is the channel index of thread i among n channels.
func ThreadChannel(i, n int) int { return i % n }
