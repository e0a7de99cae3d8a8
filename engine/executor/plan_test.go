package executor

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// valueAt reads a step function at offset off.
func valueAt(steps []Step, off time.Duration) int64 {
	var v int64
	for _, st := range steps {
		if st.Offset > off {
			break
		}
		v = st.PlannedVUs
	}
	return v
}

func ramp(start int64, grd time.Duration, stages ...Stage) *RampingVUsConfig {
	return &RampingVUsConfig{BaseConfig: BaseConfig{Name: "r", Type: RampingVUs, Exec: "default"}, StartVUs: start, Stages: stages, GracefulRampDown: grd}
}

func TestRampingVUsStaircase(t *testing.T) {
	full := segment.FullTuple()
	cases := []struct {
		name    string
		cfg     *RampingVUsConfig
		offsets []time.Duration
		want    []int64
	}{
		{"going up is floor: 0→10 over 10s has 0 VUs before 1s, then one more each second",
			ramp(0, 0, Stage{10 * s, 10, ""}),
			[]time.Duration{0, 999 * ms, 1 * s, 1500 * ms, 2 * s, 9999 * ms, 10 * s},
			[]int64{0, 0, 1, 1, 2, 9, 10}},
		{"going down is ceil: 10→0 over 10s drops to 9 at 1s",
			ramp(10, 0, Stage{10 * s, 0, ""}),
			[]time.Duration{0, 999 * ms, 1 * s, 5 * s, 9999 * ms, 10 * s},
			[]int64{10, 10, 9, 5, 1, 0}},
		{"0→4 over 4s then →0 over 4s, sampled every second: 0,1,2,3,4,3,2,1",
			ramp(0, 0, Stage{4 * s, 4, ""}, Stage{4 * s, 0, ""}),
			[]time.Duration{0, 1 * s, 2 * s, 3 * s, 4 * s, 5*s - 1, 6*s - 1, 7*s - 1, 8 * s},
			[]int64{0, 1, 2, 3, 4, 4, 3, 2, 0}},
		{"zero-duration stage jumps, hold, then 10→0 over 5s: 9 at 5.5s, 0 at 10s",
			ramp(5, 0, Stage{0, 10, ""}, Stage{5 * s, 10, ""}, Stage{5 * s, 0, ""}),
			[]time.Duration{0, 5 * s, 5499 * ms, 5500 * ms, 6 * s, 9999 * ms, 10 * s},
			[]int64{10, 10, 10, 9, 8, 1, 0}},
		{"startVUs holds through a flat stage",
			ramp(3, 0, Stage{2 * s, 3, ""}, Stage{1 * s, 4, ""}),
			[]time.Duration{0, 2 * s, 3*s - 1, 3 * s},
			[]int64{3, 3, 3, 4}},
		{"non-integer step times round up so running never exceeds floor(target)",
			ramp(0, 0, Stage{1 * s, 3, ""}),
			[]time.Duration{333333333, 333333334, 666666667},
			[]int64{0, 1, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := c.cfg.RawSteps(full)
			for i, off := range c.offsets {
				if got := valueAt(steps, off); got != c.want[i] {
					t.Errorf("at %v: %d VUs, want %d (steps %v)", off, got, c.want[i], steps)
				}
			}
		})
	}
}

// Property: on every sequence, the instances' staircases add up to the
// single-instance staircase at every moment.
func TestRampingVUsSplitSumsToWhole(t *testing.T) {
	configs := []*RampingVUsConfig{
		ramp(0, 0, Stage{10 * s, 10, ""}, Stage{10 * s, 0, ""}),
		ramp(1, 0, Stage{3 * s, 7, ""}, Stage{0, 2, ""}, Stage{5 * s, 13, ""}, Stage{7 * s, 1, ""}),
		ramp(5, 0, Stage{1 * s, 100, ""}, Stage{2 * s, 0, ""}, Stage{1 * s, 3, ""}),
	}
	for _, seq := range testSequences {
		tuples := tuplesOf(t, seq)
		for ci, c := range configs {
			whole := c.RawSteps(segment.FullTuple())
			parts := make([][]Step, len(tuples))
			for i, tu := range tuples {
				parts[i] = c.RawSteps(tu)
			}
			for off := time.Duration(0); off <= c.Duration(); off += 50 * ms {
				var sum int64
				for _, p := range parts {
					sum += valueAt(p, off)
				}
				if w := valueAt(whole, off); sum != w {
					t.Fatalf("%s config %d at %v: parts add up to %d, whole is %d", seq, ci, off, sum, w)
				}
			}
		}
	}
}

func TestRampingVUsHalvesInterleave(t *testing.T) {
	// §3.3: 0→10→0 over 10s+10s on halves: A adds VUs at 1,3,5,7,9 s, B at 2,4,6,8,10 s.
	c := ramp(0, 0, Stage{10 * s, 10, ""}, Stage{10 * s, 0, ""})
	want := [][]time.Duration{{1 * s, 3 * s, 5 * s, 7 * s, 9 * s}, {2 * s, 4 * s, 6 * s, 8 * s, 10 * s}}
	for i, tu := range tuplesOf(t, "0,1/2,1") {
		var ups []time.Duration
		prev := int64(0)
		for _, st := range c.RawSteps(tu) {
			if st.PlannedVUs > prev {
				ups = append(ups, st.Offset)
			}
			prev = st.PlannedVUs
		}
		if !reflect.DeepEqual(ups, want[i]) {
			t.Errorf("instance %d adds VUs at %v, want %v", i, ups, want[i])
		}
	}
}

func TestGracefulRampDownReservesVUs(t *testing.T) {
	c := ramp(0, 3*s, Stage{2 * s, 2, ""}, Stage{2 * s, 0, ""})
	c.GracefulStop = 10 * s
	// raw: 1 at 1s, 2 at 2s, 1 at 3s, 0 at 4s; each drop stays reserved for 3s.
	steps := c.ExecutionSteps(segment.FullTuple())
	want := []Step{{0, 0, 0}, {1 * s, 1, 0}, {2 * s, 2, 0}, {6 * s, 1, 0}, {7 * s, 0, 0}, {14 * s, 0, 0}}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("steps %v\nwant  %v", steps, want)
	}
	// gracefulStop cuts reservations short.
	c.GracefulStop = 1 * s
	steps = c.ExecutionSteps(segment.FullTuple())
	want = []Step{{0, 0, 0}, {1 * s, 1, 0}, {2 * s, 2, 0}, {5 * s, 0, 0}}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("steps %v\nwant  %v", steps, want)
	}
}

// Property: planned(τ) = max of raw over (τ−grace, τ], checked by brute force.
func TestReserveRampDownsMatchesBruteForce(t *testing.T) {
	c := ramp(2, 0, Stage{3 * s, 9, ""}, Stage{2 * s, 1, ""}, Stage{1 * s, 6, ""}, Stage{4 * s, 0, ""}, Stage{0, 4, ""}, Stage{2 * s, 0, ""})
	raw := c.RawSteps(segment.FullTuple())
	for _, grace := range []time.Duration{0, 100 * ms, 700 * ms, 1500 * ms, 5 * s} {
		end := c.Duration() + 2*s
		got := reserveRampDowns(raw, grace, end)
		for off := time.Duration(0); off < end+s; off += 10 * ms {
			var want int64
			if off < end {
				want = valueAt(raw, off)
				for _, st := range raw {
					if st.Offset <= off && st.Offset > off-grace {
						want = max(want, st.PlannedVUs)
					}
				}
				// the step in force when the window opens
				want = max(want, valueAt(raw, max(off-grace, 0)))
				if grace > 0 && off-grace >= 0 {
					// value in force just after off-grace
					want = max(want, valueAt(raw, off-grace))
				}
			}
			if v := valueAt(got, off); v != want {
				t.Fatalf("grace %v at %v: %d, want %d\nraw %v\ngot %v", grace, off, v, want, raw, got)
			}
		}
	}
}

func TestConstantArrivalStartTimes(t *testing.T) {
	cases := []struct {
		name  string
		sched ConstantSchedule
		want  []time.Duration
	}{
		{"12/s for 1s starts at k·83.33ms from 0, 12 iterations",
			ConstantSchedule{Rate: 12, TimeUnit: s, Duration: s},
			[]time.Duration{0, 83333333, 166666666, 250 * ms, 333333333, 416666666, 500 * ms, 583333333, 666666666, 750 * ms, 833333333, 916666666}},
		{"an event exactly at the end does not start",
			ConstantSchedule{Rate: 2, TimeUnit: s, Duration: s},
			[]time.Duration{0, 500 * ms}},
		{"fractional rates: 2 per 3s",
			ConstantSchedule{Rate: 2, TimeUnit: 3 * s, Duration: 4 * s},
			[]time.Duration{0, 1500 * ms, 3 * s}},
		{"1 per minute over 1s starts once",
			ConstantSchedule{Rate: 1, TimeUnit: time.Minute, Duration: s},
			[]time.Duration{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LocalOffsets(c.sched, segment.FullTuple())
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func durationsMs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(ms)
	}
	return out
}

func closeTo(t *testing.T, got []time.Duration, want []float64, tolMs float64) {
	t.Helper()
	g := durationsMs(got)
	if len(g) < len(want) {
		t.Fatalf("got %d starts %v, want at least %d", len(g), g, len(want))
	}
	for i, w := range want {
		if math.Abs(g[i]-w) > tolMs {
			t.Fatalf("start %d at %.3f ms, want %.3f ms (all: %v)", i, g[i], w, g)
		}
	}
}

func TestRampingArrivalStartTimes(t *testing.T) {
	t.Run("0→10/s over 2s then 10/s for 1s: the area reaches n at √(0.4n) s, then every 100ms; 20 events, the last exactly at 3s", func(t *testing.T) {
		sc := NewRampingSchedule(0, s, []Stage{{2 * s, 10, ""}, {1 * s, 10, ""}})
		got := LocalOffsets(sc, segment.FullTuple())
		if len(got) != 20 {
			t.Fatalf("%d events", len(got))
		}
		closeTo(t, got, []float64{632.456, 894.427, 1095.445, 1264.911, 1414.214, 1549.193, 1673.320, 1788.854, 1897.367, 2000, 2100, 2200}, 0.001)
		if got[9] != 2*s || got[19] != 3*s {
			t.Errorf("boundary events at %v and %v, want exactly 2s and 3s", got[9], got[19])
		}
	})
	t.Run("a ramp 0→10/s over 10s gives 50 events, the first at √2 s", func(t *testing.T) {
		got := LocalOffsets(NewRampingSchedule(0, s, []Stage{{10 * s, 10, ""}}), segment.FullTuple())
		if len(got) != 50 {
			t.Fatalf("%d events", len(got))
		}
		closeTo(t, got, []float64{1414.2136}, 0.001)
	})
	t.Run("a flat stage starts the first event at 1/rate, not 0", func(t *testing.T) {
		got := LocalOffsets(NewRampingSchedule(2, s, []Stage{{5 * s, 2, ""}, {5 * s, 3, ""}}), segment.FullTuple())
		closeTo(t, got, []float64{500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5488.088, 5954.451, 6401.754, 6832.160}, 0.001)
		if len(got) != 22 { // 10 + (2+3)/2·5 = 22.5 → 22
			t.Errorf("%d events", len(got))
		}
	})
	t.Run("fractions carry across stages and zero-rate stages add nothing", func(t *testing.T) {
		// 0.5 s at 3/s = 1.5 events; 1 s at 0; then 3/s again: the next event
		// needs 0.5 more area, i.e. 1/6 s into the third stage.
		got := LocalOffsets(NewRampingSchedule(3, s, []Stage{{500 * ms, 3, ""}, {0, 0, ""}, {1 * s, 0, ""}, {0, 3, ""}, {1 * s, 3, ""}}), segment.FullTuple())
		closeTo(t, got, []float64{333.333, 1666.667, 2000, 2333.333}, 0.001)
		if len(got) != 4 {
			t.Errorf("%d events: %v", len(got), got)
		}
	})
	t.Run("timeUnit 1m: 60 per minute is one per second", func(t *testing.T) {
		got := LocalOffsets(NewRampingSchedule(60, time.Minute, []Stage{{3 * s, 60, ""}}), segment.FullTuple())
		if !reflect.DeepEqual(got, []time.Duration{s, 2 * s, 3 * s}) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("ramping down to 0 ends with the last whole event", func(t *testing.T) {
		got := LocalOffsets(NewRampingSchedule(4, s, []Stage{{1 * s, 0, ""}}), segment.FullTuple())
		// area 2: events where 4x − 2x² = n: x = 1 − sqrt(1 − n/2)
		closeTo(t, got, []float64{1000 * (1 - math.Sqrt(0.5)), 1000}, 0.001)
		if len(got) != 2 {
			t.Errorf("%d events", len(got))
		}
	})
	t.Run("stage index follows the event", func(t *testing.T) {
		sc := NewRampingSchedule(0, s, []Stage{{2 * s, 10, ""}, {1 * s, 10, ""}})
		if sc.Stage(0) != 0 || sc.Stage(9) != 0 || sc.Stage(10) != 1 || sc.Stage(19) != 1 {
			t.Errorf("stages %d %d %d %d", sc.Stage(0), sc.Stage(9), sc.Stage(10), sc.Stage(19))
		}
	})
}

// Property: split across instances by the maxVUs-derived sequence, arrival
// events keep their single-instance times and each is run exactly once.
func TestArrivalSplitCoversEveryEventOnce(t *testing.T) {
	schedules := []Schedule{
		ConstantSchedule{Rate: 12, TimeUnit: s, Duration: s},
		ConstantSchedule{Rate: 7, TimeUnit: 3 * s, Duration: 20 * s},
		NewRampingSchedule(0, s, []Stage{{2 * s, 10, ""}, {1 * s, 10, ""}}),
		NewRampingSchedule(5, s, []Stage{{3 * s, 0, ""}, {0, 9, ""}, {2 * s, 17, ""}}),
	}
	for _, seq := range testSequences {
		tuples := tuplesOf(t, seq)
		for si, sc := range schedules {
			for _, maxVUs := range []int64{1, 2, 3, 5, 10, 33} {
				whole := LocalOffsets(sc, segment.FullTuple())
				seen := make([]int, len(whole))
				for _, tu := range tuples {
					d, ok, err := tu.Derive(maxVUs)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						continue
					}
					for l, off := range LocalOffsets(sc, d) {
						g := d.GlobalIndex(int64(l))
						if off != whole[g] {
							t.Fatalf("%s schedule %d: event %d at %v on an instance, %v alone", seq, si, g, off, whole[g])
						}
						seen[g]++
					}
				}
				for g, n := range seen {
					if n != 1 {
						t.Fatalf("%s schedule %d maxVUs %d: event %d run %d times", seq, si, maxVUs, g, n)
					}
				}
			}
		}
	}
}

// Property: the VU counts of every executor, and shared-iterations'
// iterations, split exactly.
func TestVUAndIterationSplitsSumToWhole(t *testing.T) {
	for _, seq := range testSequences {
		tuples := tuplesOf(t, seq)
		for _, vus := range []int64{1, 2, 3, 5, 10, 17, 100} {
			for _, iters := range []int64{vus, vus + 1, 3 * vus, 1000} {
				c := &SharedIterationsConfig{BaseConfig: BaseConfig{Name: "s", Exec: "default"}, VUs: vus, Iterations: iters, MaxDuration: s}
				var sumVUs, sumIters int64
				for _, tu := range tuples {
					sumVUs += valueAt(c.ExecutionSteps(tu), 0)
					if d, ok, _ := tu.Derive(vus); ok {
						sumIters += d.ScaleInt64(iters)
					}
				}
				if sumVUs != vus || sumIters != iters {
					t.Fatalf("%s vus %d iterations %d: split into %d VUs and %d iterations", seq, vus, iters, sumVUs, sumIters)
				}
			}
			a := &ConstantArrivalRateConfig{BaseConfig: BaseConfig{Name: "a", Exec: "default"}, Rate: 1, TimeUnit: s, Duration: s, PreAllocatedVUs: vus, MaxVUs: 3 * vus}
			var pre, total int64
			for _, tu := range tuples {
				st := a.ExecutionSteps(tu)
				pre += st[0].PlannedVUs
				total += st[0].PlannedVUs + st[0].MaxUnplannedVUs
			}
			if pre != vus || total != 3*vus {
				t.Fatalf("%s: arrival VUs split into %d/%d", seq, pre, total)
			}
		}
	}
}

func TestMaxVUsAcrossScenarios(t *testing.T) {
	base := func(name string, start time.Duration) BaseConfig {
		return BaseConfig{Name: name, Exec: "default", StartTime: start, GracefulStop: 0}
	}
	cfgs := []Config{
		&ConstantVUsConfig{BaseConfig: base("a", 0), VUs: 10, Duration: 5 * s},
		// starts when a ends (incl. its gracefulStop of 0): reuses a's VUs
		&ConstantVUsConfig{BaseConfig: base("b", 5*s), VUs: 4, Duration: 5 * s},
		// overlaps b
		&ConstantArrivalRateConfig{BaseConfig: base("c", 7*s), Rate: 1, TimeUnit: s, Duration: 2 * s, PreAllocatedVUs: 3, MaxVUs: 8},
		// shared-iterations holds its VUs for maxDuration + gracefulStop
		&SharedIterationsConfig{BaseConfig: BaseConfig{Name: "d", Exec: "default", StartTime: 9 * s, GracefulStop: 2 * s}, VUs: 2, Iterations: 2, MaxDuration: s},
	}
	p, err := NewPlan(cfgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxPlannedVUs != 10 || p.MaxVUs != 12 {
		t.Errorf("planned %d, total %d; want 10 and 4+3+5=12", p.MaxPlannedVUs, p.MaxVUs)
	}
	if p.MaxDuration != 12*s {
		t.Errorf("max duration %v", p.MaxDuration)
	}
	cfgs[1].Base().StartTime = 4 * s
	if p, _ = NewPlan(cfgs, nil); p.MaxPlannedVUs != 14 {
		t.Errorf("overlapping a and b: planned %d, want 14", p.MaxPlannedVUs)
	}
}

func TestDescriptions(t *testing.T) {
	thirds := tuplesOf(t, "0,1/3,2/3,1")
	cases := []struct {
		name string
		c    Config
		t    *segment.Tuple
		want string
	}{
		{"per-vu-iterations", &PerVUIterationsConfig{BaseConfig: BaseConfig{GracefulStop: 30 * s}, VUs: 1, Iterations: 1, MaxDuration: 10 * time.Minute}, segment.FullTuple(),
			"1 iterations for each of 1 VUs (maxDuration: 10m0s, gracefulStop: 30s)"},
		{"ramping-vus", ramp(0, 30*s, Stage{2 * s, 3, ""}), segment.FullTuple(),
			"Up to 3 looping VUs for 2s over 1 stages (gracefulRampDown: 30s, gracefulStop: 0s)"},
		{"constant-vus with startTime", &ConstantVUsConfig{BaseConfig: BaseConfig{StartTime: 10 * s, GracefulStop: 30 * s}, VUs: 10, Duration: 30 * s}, segment.FullTuple(),
			"10 looping VUs for 30s (startTime: 10s, gracefulStop: 30s)"},
		{"shared-iterations on a third", &SharedIterationsConfig{BaseConfig: BaseConfig{GracefulStop: 30 * s}, VUs: 5, Iterations: 10, MaxDuration: 10 * time.Minute}, thirds[2],
			"2 iterations shared among 1 VUs (maxDuration: 10m0s, gracefulStop: 30s)"},
		{"constant-arrival-rate on a third", &ConstantArrivalRateConfig{BaseConfig: BaseConfig{GracefulStop: 30 * s}, Rate: 12, TimeUnit: s, Duration: time.Minute, PreAllocatedVUs: 5, MaxVUs: 5}, thirds[0],
			"4.80 iterations/s for 1m0s (maxVUs: 2-2, gracefulStop: 30s)"},
		{"ramping-arrival-rate", &RampingArrivalRateConfig{BaseConfig: BaseConfig{GracefulStop: 30 * s}, TimeUnit: time.Minute, Stages: []Stage{{10 * s, 120, ""}, {10 * s, 60, ""}}, PreAllocatedVUs: 1, MaxVUs: 4}, segment.FullTuple(),
			"Up to 2.00 iterations/s for 20s over 2 stages (maxVUs: 1-4, gracefulStop: 30s)"},
	}
	for _, c := range cases {
		if got := c.c.Description(c.t); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, got, c.want)
		}
	}
}

func TestBanner(t *testing.T) {
	c := &SharedIterationsConfig{BaseConfig: BaseConfig{Name: "default", Exec: "default", GracefulStop: 30 * s}, VUs: 2, Iterations: 4, MaxDuration: 10 * time.Minute}
	p, err := NewPlan([]Config{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"scenarios: (100.00%) 1 scenario(s), 2 max VUs, 10m30s max duration (incl. graceful stop):",
		"* default: 4 iterations shared among 2 VUs (maxDuration: 10m0s, gracefulStop: 30s)",
	}
	if got := p.Banner(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

var testSequences = []string{
	"0,1",
	"0,1/2,1",
	"0,1/3,2/3,1",
	"0,1/2,3/4,1",
	"0,1/4,1/2,3/4,1",
	"0,1/10,3/10,1",
	"0,1/7,2/5,1/2,5/6,1",
	"0,0.125,0.3,0.99,1",
}

func tuplesOf(t *testing.T, seq string) []*segment.Tuple {
	t.Helper()
	q, err := segment.ParseSequence(seq)
	if err != nil {
		t.Fatal(err)
	}
	var out []*segment.Tuple
	for i := 0; i+1 < len(q); i++ {
		tu, err := segment.NewTuple(segment.Segment{From: q[i], To: q[i+1]}, q)
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %w", seq, err))
		}
		out = append(out, tu)
	}
	return out
}
