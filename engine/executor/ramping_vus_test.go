package executor

import (
	"context"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// §2.6: a VU asked to stop by a ramp-down finishes its current iteration when
// that fits in gracefulRampDown (it is not interrupted) and starts no new one.
func TestRampDownLetsTheCurrentIterationFinish(t *testing.T) {
	c := &RampingVUsConfig{BaseConfig: base("rv", 5*time.Second), StartVUs: 1, GracefulRampDown: 2 * time.Second,
		Stages: []Stage{{50 * time.Millisecond, 1, ""}, {0, 0, ""}, {400 * time.Millisecond, 0, ""}}}
	c.Type = RampingVUs
	var finished atomic.Int64
	h := runPlan(t, context.Background(), testPlan(nil, c), func(ctx context.Context, _ *Iteration) {
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			finished.Add(1)
		case <-ctx.Done():
		}
	})
	if n := h.sched.IterationsInterrupted(); n != 0 {
		t.Errorf("%d iterations interrupted; the ramp-down grace (2s) covers the 200ms iteration", n)
	}
	if finished.Load() != 1 {
		t.Errorf("%d iterations finished, want the one running at the ramp-down", finished.Load())
	}
	if starts := h.rec.startsOf("rv"); len(starts) != 1 {
		t.Errorf("%d iterations started; a ramped-down VU must not start another", len(starts))
	}
}

func TestRampingVUsRampsUpAndDownLIFO(t *testing.T) {
	c := &RampingVUsConfig{BaseConfig: base("rv", 0), StartVUs: 0, GracefulRampDown: 0,
		Stages: []Stage{{300 * time.Millisecond, 3, "up"}, {300 * time.Millisecond, 0, "down"}}}
	c.Type = RampingVUs
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(10*time.Millisecond))
	first := map[uint64]time.Duration{}
	last := map[uint64]time.Duration{}
	for _, s := range h.rec.startsOf("rv") {
		if _, ok := first[s.vuID]; !ok {
			first[s.vuID] = s.offset
		}
		last[s.vuID] = s.offset
		wantStage := 0
		if s.offset > 320*time.Millisecond {
			wantStage = 1
		}
		if s.offset < 280*time.Millisecond || s.offset > 320*time.Millisecond {
			if s.stage != wantStage || s.stageName != c.Stages[wantStage].Name {
				t.Errorf("iteration at %v in stage %d %q", s.offset, s.stage, s.stageName)
			}
		}
	}
	if len(first) != 3 {
		t.Fatalf("%d VUs ran", len(first))
	}
	// VUs join at 100, 200, 300 ms and leave at 400, 500, 600 ms, last in first out.
	type span struct {
		id          uint64
		first, last time.Duration
	}
	var spans []span
	for id := range first {
		spans = append(spans, span{id, first[id], last[id]})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	for i, sp := range spans {
		joinAt := time.Duration(i+1) * 100 * time.Millisecond
		leaveAt := time.Duration(6-i) * 100 * time.Millisecond
		// never early; late only by scheduling delay
		if sp.first < joinAt || sp.first > joinAt+300*time.Millisecond {
			t.Errorf("VU %d joined at %v, want ≈%v", sp.id, sp.first, joinAt)
		}
		if sp.last > leaveAt+300*time.Millisecond {
			t.Errorf("VU %d last started at %v, want before %v", sp.id, sp.last, leaveAt)
		}
		// last in, first out (50ms slack: a starved controller may
		// process two stops at once)
		if i > 0 && sp.last > spans[i-1].last+50*time.Millisecond {
			t.Errorf("VU %d (joined %d.) last started at %v, after VU %d at %v", sp.id, i+1, sp.last, spans[i-1].id, spans[i-1].last)
		}
	}
	if len(h.rec.stageEvents) != 4 {
		t.Errorf("stage events %+v", h.rec.stageEvents)
	}
}

func TestRampingVUsGracefulRampDownInterrupts(t *testing.T) {
	// One VU, ramped to 0 at 100ms with a 50ms gracefulRampDown, runs a
	// never-ending iteration: it is interrupted at ≈150ms, long before the
	// scenario's gracefulStop.
	c := &RampingVUsConfig{BaseConfig: base("rv", 10*time.Second), StartVUs: 1, GracefulRampDown: 50 * time.Millisecond,
		Stages: []Stage{{100 * time.Millisecond, 1, ""}, {0, 0, ""}, {300 * time.Millisecond, 0, ""}}}
	c.Type = RampingVUs
	var interruptedAt atomic.Int64
	begin := time.Now()
	h := runPlan(t, context.Background(), testPlan(nil, c), func(ctx context.Context, _ *Iteration) {
		<-ctx.Done()
		interruptedAt.Store(int64(time.Since(begin)))
	})
	at := time.Duration(interruptedAt.Load())
	if h.sched.IterationsInterrupted() != 1 || at < 140*time.Millisecond || at > 400*time.Millisecond {
		t.Errorf("interrupted %d iterations, at %v", h.sched.IterationsInterrupted(), at)
	}
}

func TestRampingVUsRestartCancelsAPendingStop(t *testing.T) {
	// Down to 0 at 100ms and back to 1 at 200ms, within gracefulRampDown,
	// while the first 400ms iteration runs: the same VU carries on, nothing
	// is interrupted, and a second iteration starts after the first.
	c := &RampingVUsConfig{BaseConfig: base("rv", time.Second), StartVUs: 1, GracefulRampDown: time.Second,
		Stages: []Stage{{100 * time.Millisecond, 1, ""}, {0, 0, ""}, {100 * time.Millisecond, 0, ""}, {0, 1, ""}, {300 * time.Millisecond, 1, ""}}}
	c.Type = RampingVUs
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(400*time.Millisecond))
	if h.sched.IterationsInterrupted() != 0 {
		t.Errorf("interrupted %d", h.sched.IterationsInterrupted())
	}
	starts := h.rec.startsOf("rv")
	if len(starts) != 2 || starts[0].vuID != starts[1].vuID || starts[1].vuInScen != 1 {
		t.Errorf("starts %+v", starts)
	}
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
