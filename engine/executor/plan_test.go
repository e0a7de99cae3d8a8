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
