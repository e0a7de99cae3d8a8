package capacity

import (
	"math/rand/v2"
	"testing"
)

// drive runs a search against judge (users → probe outcome) and returns
// the answer; it fails the test past 200 probes.
func drive(t *testing.T, cfg Config, judge func(users int) Probe) Answer {
	t.Helper()
	s := New(cfg)
	for i := 0; ; i++ {
		u, ok := s.Next()
		if !ok {
			return s.Answer()
		}
		if i == 200 {
			t.Fatalf("no end after 200 probes: %+v", s.Answer().Probes)
		}
		p := judge(u)
		p.Users = u
		s.Observe(p)
	}
}

func knee(k int) func(int) Probe {
	return func(u int) Probe {
		if u <= k {
			return Probe{Valid: true, Pass: true}
		}
		return Probe{Valid: true, Reason: "deliver p99", Limit: &Limit{Metric: "buzz_op_duration", Op: "deliver", Stat: "p(99)", Value: 700, Expr: "p(99)<500"}}
	}
}

var base = Config{Start: 10, Max: 100000, Resolution: 0.05, Repeats: 3, Growth: 2}

// A sharp knee is found within the resolution by every repeat, the
// interval is the knee, and what limited it is named.
func TestASharpKneeIsFound(t *testing.T) {
	for _, k := range []int{1, 9, 10, 37, 250, 999, 4321} {
		a := drive(t, base, knee(k))
		if a.Users > k || float64(k-a.Users) > 0.05*float64(k)+1 {
			t.Errorf("knee %d: answer %d (%+v)", k, a.Users, a.Knees)
		}
		if len(a.Knees) != 3 || a.CI95[0] > a.Users || a.CI95[1] < a.Users {
			t.Errorf("knee %d: knees %v interval %v", k, a.Knees, a.CI95)
		}
		if a.LimitedBy != "deliver p(99) at 700 ms (limit p(99)<500)" {
			t.Errorf("knee %d: limited by %q", k, a.LimitedBy)
		}
		if a.Stopped != "" || a.AtLeast || a.GeneratorLimit != 0 {
			t.Errorf("knee %d: %+v", k, a)
		}
	}
}

// Every probe passing up to max_users: "at least max".
func TestNoFailureUpToTheMaximum(t *testing.T) {
	cfg := base
	cfg.Max = 300
	a := drive(t, cfg, knee(1000))
	if !a.AtLeast || a.Users != 300 || a.Text() != "holds at least 300 people of this profile (max_users: no probe failed)" {
		t.Fatalf("%+v %q", a, a.Text())
	}
}

// An invalid probe is retried at the same level, never counted as a
// failure; too many in a row stop the search saying why; a generator
// that is the limit stops it with no capacity number.
func TestInvalidProbesAreNotFailures(t *testing.T) {
	n := 0
	flaky := func(u int) Probe {
		n++
		if u == 40 && n%2 == 1 { // every other probe at 40 was throttled
			return Probe{Reason: "throttled by the relay's quotas"}
		}
		return knee(57)(u)
	}
	a := drive(t, base, flaky)
	if a.Users < 55 || a.Users > 57 {
		t.Fatalf("answer %d, want the knee 57 within the resolution", a.Users)
	}
	invalid := 0
	for _, p := range a.Probes {
		if !p.Valid {
			invalid++
			if p.Users != 40 || p.Pass {
				t.Errorf("invalid probe %+v", p)
			}
		}
	}
	if invalid == 0 {
		t.Fatal("no invalid probe was recorded")
	}
	a = drive(t, base, func(u int) Probe {
		if u >= 40 {
			return Probe{Reason: "limiter unavailable"}
		}
		return Probe{Valid: true, Pass: true}
	})
	if len(a.Knees) != 0 || a.Stopped == "" || a.Text() != "no answer: "+a.Stopped {
		t.Fatalf("%+v", a)
	}
	a = drive(t, base, func(u int) Probe {
		if u >= 80 {
			return Probe{GeneratorLimited: true, Reason: "generator CPU 81 %"}
		}
		return Probe{Valid: true, Pass: true}
	})
	if a.GeneratorLimit != 80 || a.Users != 0 || a.Text() != "the generator is the limit at 80 people: add runners (no capacity number: the relay was not the limit)" {
		t.Fatalf("%+v %q", a, a.Text())
	}
}

// A noisy edge (each probe passes with a probability falling linearly over
// ±10 % of the knee): the repeats' knees differ and the 95 % interval
// holds the true knee in most searches.
func TestANoisyEdgeGivesAnInterval(t *testing.T) {
	const k = 500
	covered, searches := 0, 40
	for seed := range searches {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		noisy := func(u int) Probe {
			p := 1.0
			switch {
			case u >= k*11/10:
				p = 0
			case u > k*9/10:
				p = float64(k*11/10-u) / float64(k*2/10)
			}
			if rng.Float64() < p {
				return Probe{Valid: true, Pass: true}
			}
			return Probe{Valid: true, Reason: "p99"}
		}
		a := drive(t, Config{Start: 10, Max: 100000, Resolution: 0.02, Repeats: 5, Growth: 2}, noisy)
		if a.CI95[0] > a.Users || a.CI95[1] < a.Users || a.Users < k*8/10 || a.Users > k*12/10 {
			t.Fatalf("seed %d: answer %d interval %v knees %v", seed, a.Users, a.CI95, a.Knees)
		}
		if a.CI95[0] <= k && k <= a.CI95[1] {
			covered++
		}
	}
	if covered < searches/2 {
		t.Errorf("the interval held the knee in %d of %d searches", covered, searches)
	}
}

// A probe of one person failing ends the search: nothing holds.
func TestOnePersonFails(t *testing.T) {
	a := drive(t, base, knee(0))
	if len(a.Knees) != 0 || a.Stopped != "a probe of 1 person failed" {
		t.Fatalf("%+v", a)
	}
}
