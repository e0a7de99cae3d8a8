package executor

import (
	"context"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

func TestRampingArrivalRateStartsAndStages(t *testing.T) {
	c := &RampingArrivalRateConfig{BaseConfig: base("rar", 100*time.Millisecond), TimeUnit: time.Second, PreAllocatedVUs: 15, MaxVUs: 15,
		Stages: []Stage{{200 * time.Millisecond, 50, "up"}, {200 * time.Millisecond, 50, "flat"}}}
	c.Type = RampingArrivalRate
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	starts := h.rec.startsOf("rar")
	dropped, _ := h.rec.dropped()
	// area: 0.2·50/2 + 0.2·50 = 5 + 10 = 15
	sort.Slice(starts, func(i, j int) bool { return starts[i].inInstance < starts[j].inInstance })
	if len(starts) != 15 || dropped != 0 {
		t.Fatalf("%d starts, %d dropped; want 15", len(starts), dropped)
	}
	for i, s := range starts {
		wantStage := 0
		if i >= 5 {
			wantStage = 1
		}
		if s.stage != wantStage || s.stageName != c.Stages[wantStage].Name {
			t.Errorf("start %d in stage %d %q", i, s.stage, s.stageName)
		}
	}
	var names []string
	for _, ev := range h.rec.stageEvents {
		names = append(names, ev.Name)
		if ev.Index < 0 && ev.Offset != []time.Duration{200, 400}[-1-ev.Index]*time.Millisecond {
			t.Errorf("stage %d ended at offset %v", -1-ev.Index, ev.Offset)
		}
	}
	// Each stage starts and ends under its own name.
	if want := []string{"up", "up", "flat", "flat"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("stage event names %v, want %v", names, want)
	}
	if len(h.rec.stageEvents) != 4 || h.rec.stageEvents[0].Index != 0 || h.rec.stageEvents[1].Index != -1 || h.rec.stageEvents[2].Index != 1 || h.rec.stageEvents[3].Index != -2 {
		t.Errorf("stage events %+v", h.rec.stageEvents)
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
