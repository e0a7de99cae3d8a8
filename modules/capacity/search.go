// Package capacity searches how many people a deployment holds at its
// service level (issue 44): a geometric rise until a probe fails, a
// bisection to the resolution, repeated searches of the edge for a 95 %
// interval, and probes that are invalid (the generator the limit, the
// relay's quotas or its limiter in the way) told apart from failures, as
// Buzz's own ingest-ceiling harness does (../shared/docs/audits/anchors.md
// §1.2, §5). The search is a pure state machine (Search: Next, Observe,
// Answer); running probes is the caller's (cmd/buzzload capacity.go), and
// judging one from its report is judge.go's.
package capacity

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/modules/stats"
)

// Config is the search's shape ([capacity] of the scenario).
type Config struct {
	Start, Max int
	Resolution float64
	Repeats    int
	Growth     float64
	// Retries of an invalid probe at the same level before the search
	// stops (default 2).
	Retries int
}

// Limit is the statistic of a probe nearest its limit (the one that
// failed it, when it failed).
type Limit struct {
	Metric string  `json:"metric"` // buzz_op_duration, buzz_op_failed, buzz_ledger_reach
	Op     string  `json:"op,omitempty"`
	Stat   string  `json:"stat"` // p(99), rate, …
	Value  float64 `json:"value"`
	Expr   string  `json:"expr"`  // the limit as written, e.g. p(99)<500
	Max    float64 `json:"limit"` // its number
}

func (l *Limit) String() string {
	if l == nil {
		return ""
	}
	what := l.Metric
	if l.Op != "" {
		what = l.Op
	}
	unit := ""
	if l.Metric == "buzz_op_duration" {
		unit = " ms"
	}
	return fmt.Sprintf("%s %s at %.4g%s (limit %s)", what, l.Stat, l.Value, unit, l.Expr)
}

// Probe is one probe's outcome.
type Probe struct {
	Users  int    `json:"users"`
	Repeat int    `json:"repeat"` // which search of the edge (0: the first)
	Valid  bool   `json:"valid"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"` // why it failed or was invalid
	// GeneratorLimited: the generator, not the relay, was the limit.
	GeneratorLimited bool   `json:"generator_limited,omitempty"`
	Limit            *Limit `json:"limit,omitempty"`
	// Filled by the runner of the probes.
	StartS float64 `json:"start_s"`
	Secs   float64 `json:"secs"`
	Report string  `json:"report,omitempty"`
}

// Answer is what the search found.
type Answer struct {
	// Users is the knee: the mean of the searches' last passing levels.
	Users int    `json:"users"`
	CI95  [2]int `json:"ci95"`
	// Knees are each search's last passing level.
	Knees     []int  `json:"knees"`
	LimitedBy string `json:"limited_by,omitempty"`
	Limit     *Limit `json:"limit,omitempty"`
	// AtLeast: every probe passed up to max_users.
	AtLeast bool `json:"at_least,omitempty"`
	// GeneratorLimit is the people at which the generator was the limit
	// (no capacity number is given then).
	GeneratorLimit int `json:"generator_limit,omitempty"`
	// Stopped says why the search ended before it converged.
	Stopped string  `json:"stopped,omitempty"`
	Probes  []Probe `json:"probes"`
}

// Text is the answer as a sentence.
func (a Answer) Text() string {
	switch {
	case a.GeneratorLimit > 0:
		return fmt.Sprintf("the generator is the limit at %d people: add runners (no capacity number: the relay was not the limit)", a.GeneratorLimit)
	case a.Stopped != "" && len(a.Knees) == 0:
		return "no answer: " + a.Stopped
	case a.AtLeast:
		return fmt.Sprintf("holds at least %d people of this profile (max_users: no probe failed)", a.Users)
	}
	s := fmt.Sprintf("holds %d people of this profile (95 %% interval [%d, %d])", a.Users, a.CI95[0], a.CI95[1])
	if a.LimitedBy != "" {
		s += "; limited by " + a.LimitedBy
	}
	if a.Stopped != "" {
		s += " (" + a.Stopped + ")"
	}
	return s
}

type phase int

const (
	rising phase = iota
	bisecting
	done
)

// Search is the state of one capacity search.
type Search struct {
	cfg    Config
	phase  phase
	next   int
	lo, hi int // the last passing and first failing levels of this repeat (0: none)
	// loAssumed: this repeat's passing end was not probed in it.
	loAssumed bool
	repeat    int
	knees     []int
	firstHi   int
	invalid   int // invalid probes in a row at next
	genLimit  int
	stopped   string
	atLeast   bool
	probes    []Probe
}

// New starts a search at cfg.Start.
func New(cfg Config) *Search {
	if cfg.Retries <= 0 {
		cfg.Retries = 2
	}
	cfg.Repeats = max(cfg.Repeats, 1)
	cfg.Start = max(1, min(cfg.Start, cfg.Max))
	return &Search{cfg: cfg, next: cfg.Start}
}

// Next is the people of the next probe; ok false when the search is done.
func (s *Search) Next() (users int, ok bool) {
	if s.phase == done {
		return 0, false
	}
	return s.next, true
}

// Stop ends the search (the time budget, an error running probes).
func (s *Search) Stop(why string) {
	if s.phase != done {
		s.stopped, s.phase = why, done
	}
}

// Observe takes the outcome of the probe Next asked for.
func (s *Search) Observe(p Probe) {
	if s.phase == done {
		return
	}
	p.Repeat = s.repeat
	s.probes = append(s.probes, p)
	if !p.Valid {
		if p.GeneratorLimited {
			s.genLimit = p.Users
			s.Stop("the generator was the limit")
			return
		}
		s.invalid++
		if s.invalid > s.cfg.Retries {
			s.Stop(fmt.Sprintf("%d probes in a row at %d people were invalid: %s", s.invalid, p.Users, p.Reason))
		}
		return // the same level again
	}
	s.invalid = 0
	if p.Pass {
		s.lo, s.loAssumed = p.Users, false
	} else {
		if p.Users <= s.lo { // the bracket's passing end no longer holds: the knee is below
			s.lo, s.loAssumed = 0, false
		}
		s.hi = p.Users
	}
	switch s.phase {
	case rising:
		if p.Pass {
			if p.Users >= s.cfg.Max {
				s.atLeast = true
				s.knees = append(s.knees, p.Users)
				s.phase = done
				return
			}
			s.next = min(s.cfg.Max, max(p.Users+1, int(math.Ceil(float64(p.Users)*s.cfg.Growth))))
			return
		}
		s.phase = bisecting
	}
	s.bisect()
}

// bisect probes the middle of [lo, hi] until it is narrow enough, then
// records the knee and starts the next repeat or ends.
func (s *Search) bisect() {
	if s.hi > 0 && s.lo >= s.hi { // noise: a pass at or above a failure
		s.hi = 0
	}
	if s.hi == 0 { // the bracket's failure no longer holds: look above
		if s.lo >= s.cfg.Max {
			s.knees = append(s.knees, s.lo)
			s.endRepeat()
			return
		}
		s.next = min(s.cfg.Max, max(s.lo+1, int(math.Ceil(float64(s.lo)*(1+2*s.cfg.Resolution)))))
		return
	}
	if s.hi <= 1 && s.lo == 0 {
		s.Stop("a probe of 1 person failed")
		return
	}
	width := float64(s.hi - s.lo)
	if width <= math.Max(1, s.cfg.Resolution*float64(s.hi)) {
		if s.lo == 0 || s.loAssumed {
			// The bracket's lower end was not probed in this repeat (or no
			// level passed): probe it before calling it the knee.
			if s.lo == 0 {
				s.next = max(1, s.hi/2)
			} else {
				s.next = s.lo
			}
			s.loAssumed = false
			return
		}
		if s.firstHi == 0 {
			s.firstHi = s.hi
		}
		s.knees = append(s.knees, s.lo)
		s.endRepeat()
		return
	}
	s.next = s.lo + int(math.Ceil(width/2))
	if s.next >= s.hi {
		s.next = s.hi - 1
	}
}

// endRepeat starts the next search of the edge, over a bracket around
// the first search's (2 resolutions either side, its ends assumed), or
// ends the search.
func (s *Search) endRepeat() {
	if len(s.knees) >= s.cfg.Repeats || s.firstHi == 0 {
		s.phase = done
		return
	}
	first := s.knees[0]
	s.repeat++
	s.lo = max(1, int(math.Floor(float64(first)*(1-2*s.cfg.Resolution))))
	s.hi = min(s.cfg.Max, int(math.Ceil(float64(s.firstHi)*(1+2*s.cfg.Resolution))))
	s.loAssumed = true
	if s.hi <= s.lo {
		s.hi = s.lo + 1
	}
	s.next = s.lo + int(math.Ceil(float64(s.hi-s.lo)/2))
	if s.next >= s.hi {
		s.next = s.hi - 1
	}
	if s.next <= s.lo {
		s.next = s.lo // a bracket of one: probe its lower end
		s.loAssumed = false
	}
	s.phase = bisecting
}

// Answer is the search's result so far (final once Next says done).
func (s *Search) Answer() Answer {
	a := Answer{Knees: append([]int(nil), s.knees...), Stopped: s.stopped, AtLeast: s.atLeast,
		GeneratorLimit: s.genLimit, Probes: append([]Probe(nil), s.probes...)}
	if len(s.knees) == 0 {
		return a
	}
	xs := make([]float64, len(s.knees))
	for i, k := range s.knees {
		xs[i] = float64(k)
	}
	ci := stats.MeanCI(xs)
	a.Users = int(math.Round(ci.Estimate))
	if len(s.knees) == 1 {
		hi := s.firstHi
		if hi == 0 {
			hi = s.knees[0]
		}
		a.CI95 = [2]int{s.knees[0], max(s.knees[0], hi-1)}
	} else {
		a.CI95 = [2]int{max(1, int(math.Floor(ci.Lo))), min(s.cfg.Max, int(math.Ceil(ci.Hi)))}
	}
	// What limited it: the lowest valid failure above the knee.
	var fails []Probe
	for _, p := range s.probes {
		if p.Valid && !p.Pass && p.Users > a.Users {
			fails = append(fails, p)
		}
	}
	sort.SliceStable(fails, func(i, j int) bool { return fails[i].Users < fails[j].Users })
	if len(fails) > 0 {
		a.Limit = fails[0].Limit
		a.LimitedBy = fails[0].Limit.String()
		if a.LimitedBy == "" {
			a.LimitedBy = strings.TrimSpace(fails[0].Reason)
		}
	}
	return a
}
