package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestCollector(t testing.TB) (*Collector, *Metric, *Metric, *Metric) {
	t.Helper()
	reg := NewRegistry()
	dur, err := reg.New("x_op_duration", Trend, Time)
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := reg.New("x_op_failed", Rate, Default)
	count, _ := reg.New("x_ops", Counter, Default)
	return NewCollector(reg, CollectorOptions{BatchSize: 64}), dur, failed, count
}

func TestSamplesFromManyGoroutinesAreAllCounted(t *testing.T) {
	c, dur, _, count := newTestCollector(t)
	const producers, per = 8, 5000
	tags := NewTagSet(Tag{"op", "publish"})
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			var b *Buffer
			if p%2 == 0 {
				b = c.NewBuffer()
				defer b.Close()
			}
			for i := 0; i < per; i++ {
				s1 := Sample{Metric: count, Tags: tags, Time: t0, Value: 1}
				s2 := Sample{Metric: dur, Tags: tags, Time: t0, Value: float64(i%100 + 1)}
				if b != nil {
					b.Add(s1)
					b.Add(s2)
				} else {
					c.Add(s1)
					c.Add(s2)
				}
			}
		}(p)
	}
	wg.Wait()
	snap := c.Snapshot(10 * time.Second)
	cs, _ := snap.Lookup("x_ops")
	if got := cs.(*CounterSink).Sum(); got != producers*per {
		t.Fatalf("counter = %v, want %d", got, producers*per)
	}
	ts, _ := snap.Lookup("x_op_duration")
	if got := ts.(*TrendSink).Count(); got != producers*per {
		t.Fatalf("trend count = %v", got)
	}
	if r, _ := cs.Value(Stat{Kind: StatRate}, snap.Duration); r != producers*per/10 {
		t.Fatalf("rate = %v", r)
	}
}

func TestUnflushedBufferSamplesAppearInSnapshot(t *testing.T) {
	c, _, _, count := newTestCollector(t)
	b := c.NewBuffer()
	b.Add(Sample{Metric: count, Time: t0, Value: 3}) // far below the batch size
	snap := c.Snapshot(time.Second)
	s, _ := snap.Lookup("x_ops")
	if s == nil || s.(*CounterSink).Sum() != 3 {
		t.Fatalf("snapshot missed the buffered sample: %v", s)
	}
	b.Close()
	b2 := c.NewBuffer() // reuses the freed slot without disturbing others
	b2.Add(Sample{Metric: count, Time: t0, Value: 1})
	b2.Close()
	s, _ = c.Snapshot(time.Second).Lookup("x_ops")
	if s.(*CounterSink).Sum() != 4 {
		t.Fatalf("sum = %v", s.(*CounterSink).Sum())
	}
}

func TestSubmetricsAreCreatedOnDemandAndFedFromThen(t *testing.T) {
	c, dur, _, _ := newTestCollector(t)
	pub := NewTagSet(Tag{"op", "publish"}, Tag{"scenario", "a"})
	sub := NewTagSet(Tag{"op", "subscribe"}, Tag{"scenario", "a"})
	c.Add(Sample{Metric: dur, Tags: pub, Time: t0, Value: 100}) // before the sub-metric exists
	c.Flush()
	if err := c.Track("x_op_duration{op:publish}"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		c.Add(Sample{Metric: dur, Tags: pub, Time: t0, Value: 10})
		c.Add(Sample{Metric: dur, Tags: sub, Time: t0, Value: 20})
	}
	snap := c.Snapshot(time.Second)
	s, m := snap.Lookup("x_op_duration{op:publish}")
	if s == nil || m == nil {
		t.Fatal("sub-metric missing from snapshot")
	}
	if n := s.(*TrendSink).Count(); n != 10 {
		t.Fatalf("sub-metric count = %d, want 10 (samples before creation are not in it)", n)
	}
	if mx := s.(*TrendSink).Max(); mx != 10 {
		t.Fatalf("sub-metric took a non-matching sample: max = %v", mx)
	}
	if n := m.Sink.(*TrendSink).Count(); n != 21 {
		t.Fatalf("parent count = %d", n)
	}
	t.Run("unknown metric is an error naming it", func(t *testing.T) {
		err := c.Track("nope_metric{a:b}")
		if err == nil || !strings.Contains(err.Error(), "nope_metric") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("tracked metric without samples is in the snapshot", func(t *testing.T) {
		if err := c.Track("x_op_failed"); err != nil {
			t.Fatal(err)
		}
		s, _ := c.Snapshot(time.Second).Lookup("x_op_failed")
		if s == nil || !s.IsEmpty() {
			t.Fatalf("got %v", s)
		}
	})
	t.Run("untracked metric without samples is not", func(t *testing.T) {
		if s, _ := c.Snapshot(time.Second).Lookup("x_ops"); s != nil {
			t.Fatalf("got %v", s)
		}
	})
}

func TestGroupedSinksPerOperationAndStep(t *testing.T) {
	c, dur, _, _ := newTestCollector(t)
	if err := c.AddGroup("x_op_duration", "op", "step"); err != nil {
		t.Fatal(err)
	}
	type key struct{ op, step string }
	want := map[key][]float64{}
	ops := []string{"publish", "subscribe_eose", "history"}
	buf := c.NewBuffer() // one producer, so first-seen order is its order
	for i := 0; i < 3000; i++ {
		op, step := ops[i%3], fmt.Sprint(i%4)
		tags := NewTagSet(Tag{"op", op}, Tag{"step", step}, Tag{"scenario", "x"})
		v := float64(i%97) + 0.5
		buf.Add(Sample{Metric: dur, Tags: tags, Time: t0, Value: v})
		want[key{op, step}] = append(want[key{op, step}], v)
	}
	buf.Add(Sample{Metric: dur, Tags: NewTagSet(Tag{"op", "auth"}), Time: t0, Value: 1}) // no step tag
	snap := c.Snapshot(time.Second)
	g := snap.Metric("x_op_duration").Group("op", "step")
	if g == nil {
		t.Fatal("group missing")
	}
	if len(g.Rows) != len(want)+1 {
		t.Fatalf("rows = %d, want %d", len(g.Rows), len(want)+1)
	}
	if g.Rows[0].Values[0] != "publish" || g.Rows[0].Values[1] != "0" {
		t.Fatalf("rows are not in first-seen order: %v", g.Rows[0].Values)
	}
	for _, r := range g.Rows {
		vals, ok := want[key{r.Values[0], r.Values[1]}]
		if !ok {
			if r.Values[0] != "auth" || r.Values[1] != "" {
				t.Fatalf("unexpected row %v", r.Values)
			}
			continue
		}
		sort.Float64s(vals)
		ts := r.Sink.(*TrendSink)
		if ts.Count() != int64(len(vals)) || ts.Max() != vals[len(vals)-1] {
			t.Fatalf("row %v: count %d max %v", r.Values, ts.Count(), ts.Max())
		}
		if p := ts.Percentile(95); math.Abs(p-exactPercentile(vals, 95)) > 1e-9 {
			t.Fatalf("row %v: p95 %v want %v", r.Values, p, exactPercentile(vals, 95))
		}
	}
	t.Run("grouping every metric by scenario", func(t *testing.T) {
		if err := c.AddGroup("", "scenario"); err != nil {
			t.Fatal(err)
		}
		c.Add(Sample{Metric: dur, Tags: NewTagSet(Tag{"scenario", "x"}), Time: t0, Value: 1})
		m := c.Snapshot(time.Second).Metric("x_op_duration")
		g := m.Group("scenario")
		if g == nil || len(g.Rows) != 1 || g.Rows[0].Sink.(*TrendSink).Count() != 1 {
			t.Fatalf("scenario group = %+v", g)
		}
	})
}

func TestWindowsHoldOnlyTheirStagesSamples(t *testing.T) {
	c, dur, _, _ := newTestCollector(t)
	w, err := c.AddWindow("x_op_duration{scenario:ramp}")
	if err != nil {
		t.Fatal(err)
	}
	ramp := NewTagSet(Tag{"scenario", "ramp"})
	other := NewTagSet(Tag{"scenario", "other"})
	add := func(sec float64, v float64, tags TagSet) {
		c.Add(Sample{Metric: dur, Tags: tags, Time: t0.Add(time.Duration(sec * float64(time.Second))), Value: v})
	}
	add(0.5, 999, ramp) // before the stage started: dropped from the window
	c.StartWindows([]*Window{w}, t0.Add(time.Second))
	add(1.5, 10, ramp)
	add(1.6, 11, ramp)
	add(1.7, 500, other) // not matching the selector
	add(3.5, 20, ramp)   // already in stage 2 when stage 1 ends
	res := c.EndWindows([]*Window{w}, t0.Add(3*time.Second))
	s1 := res[0].(*TrendSink)
	if s1.Count() != 2 || s1.Max() != 11 {
		t.Fatalf("stage 1 window: count %d max %v", s1.Count(), s1.Max())
	}
	c.StartWindows([]*Window{w}, t0.Add(3*time.Second)) // continuing: keeps the 3.5 s sample
	add(2.9, 30, ramp)                                  // late: belongs to stage 1, already judged
	add(4, 21, ramp)
	res = c.EndWindows([]*Window{w}, t0.Add(5*time.Second))
	s2 := res[0].(*TrendSink)
	if s2.Count() != 2 || s2.Min() != 20 || s2.Max() != 21 {
		t.Fatalf("stage 2 window: count %d min %v max %v", s2.Count(), s2.Min(), s2.Max())
	}
	if c.LateWindowSamples() != 1 { // the 2.9 s one; the 0.5 s one came before any stage
		t.Fatalf("late = %d, want 1", c.LateWindowSamples())
	}
	c.StartWindows([]*Window{w}, t0.Add(10*time.Second)) // gap between stages: window restarts empty
	add(6, 1, ramp)
	add(11, 2, ramp)
	res = c.EndWindows([]*Window{w}, t0.Add(12*time.Second))
	if s3 := res[0].(*TrendSink); s3.Count() != 1 || s3.Min() != 2 {
		t.Fatalf("stage 3 window: count %d", s3.Count())
	}
}

func TestSnapshotMergeOfInstancesEqualsOneInstanceOfAll(t *testing.T) {
	build := func(filter func(i int) bool) *Snapshot {
		c, dur, failed, count := newTestCollector(t)
		_ = c.AddGroup("x_op_duration", "op")
		_ = c.Track("x_op_duration{op:publish}")
		_ = c.Track("x_op_failed")
		g, _ := c.Registry().New("x_clients", Gauge, Default)
		for i := 0; i < 4000; i++ {
			if !filter(i) {
				continue
			}
			tags := NewTagSet(Tag{"op", []string{"publish", "history", "auth"}[i%3]})
			ts := t0.Add(time.Duration(i) * time.Millisecond)
			c.Add(Sample{Metric: dur, Tags: tags, Time: ts, Value: float64(i%1000) * 1.37})
			c.Add(Sample{Metric: count, Tags: tags, Time: ts, Value: 1})
			c.Add(Sample{Metric: g, Tags: tags, Time: ts, Value: float64(i % 50)})
			if i%7 == 0 {
				c.Add(Sample{Metric: failed, Tags: tags, Time: ts, Value: float64(i % 2)})
			}
		}
		return c.Snapshot(4 * time.Second)
	}
	all := build(func(int) bool { return true })
	a := build(func(i int) bool { return i%3 != 1 })
	b := build(func(i int) bool { return i%3 == 1 })

	// Through JSON, as `buzzload merge` reads instance files.
	var a2, b2 Snapshot
	for _, p := range []struct {
		in  *Snapshot
		out *Snapshot
	}{{a, &a2}, {b, &b2}} {
		j, err := json.Marshal(p.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j, p.out); err != nil {
			t.Fatal(err)
		}
	}
	if err := a2.Merge(&b2); err != nil {
		t.Fatal(err)
	}
	// Group rows may be in another first-seen order; sort both for comparing.
	for _, s := range []*Snapshot{&a2, all} {
		for _, m := range s.Metrics {
			for _, g := range m.Groups {
				sort.Slice(g.Rows, func(i, j int) bool { return strings.Join(g.Rows[i].Values, ",") < strings.Join(g.Rows[j].Values, ",") })
			}
		}
	}
	got, _ := json.Marshal(&a2)
	want, _ := json.Marshal(all)
	if string(got) != string(want) {
		t.Fatalf("merged snapshot differs\n got %.600s\nwant %.600s", got, want)
	}
	t.Run("type clash is an error naming the metric", func(t *testing.T) {
		s := &Snapshot{Metrics: []*MetricSnapshot{{Name: "x_ops", Type: Gauge, Sink: NewSink(Gauge)}}}
		err := s.Merge(all)
		if err == nil || !strings.Contains(err.Error(), "x_ops") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad snapshot files are errors naming the metric", func(t *testing.T) {
		bad := []struct{ rule, in, want string }{
			{"wrong version", `{"version":9,"metrics":[]}`, "version"},
			{"sink type differs from metric", `{"version":1,"metrics":[{"name":"ab","type":"counter","contains":"default","sink":{"type":"rate","passes":0,"total":0}}]}`, `"ab"`},
			{"bad metric name", `{"version":1,"metrics":[{"name":"a","type":"counter","contains":"default","sink":{"type":"counter"}}]}`, "metrics[0]"},
			{"duplicate metric", `{"version":1,"metrics":[{"name":"ab","type":"counter","contains":"default","sink":{"type":"counter"}},{"name":"ab","type":"counter","contains":"default","sink":{"type":"counter"}}]}`, "twice"},
			{"unknown type", `{"version":1,"metrics":[{"name":"ab","type":"histo","contains":"default","sink":{"type":"counter"}}]}`, "metrics[0]"},
		}
		for _, c := range bad {
			var s Snapshot
			err := json.Unmarshal([]byte(c.in), &s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want it to contain %s", c.rule, err, c.want)
			}
		}
	})
}

func TestSnapshotJSONIsStable(t *testing.T) {
	c, dur, _, _ := newTestCollector(t)
	_ = c.Track("x_op_duration{op:b}")
	_ = c.Track("x_op_duration{op:a}")
	c.Add(Sample{Metric: dur, Tags: NewTagSet(Tag{"op", "a"}), Time: t0, Value: 1.5})
	s1, _ := json.Marshal(c.Snapshot(time.Second))
	s2, _ := json.Marshal(c.Snapshot(time.Second))
	if string(s1) != string(s2) {
		t.Fatal("two snapshots of the same state differ")
	}
	want := `{"version":1,"duration_ns":1000000000,"metrics":[{"name":"x_op_duration","type":"trend","contains":"time","tracked":true,` +
		`"sink":{"type":"trend","count":1,"sum_units":"1500000","min":1.5,"max":1.5,"pos":[[1499136,1]],"exact":[1.5]},` +
		`"submetrics":[{"name":"x_op_duration{op:a}","sink":{"type":"trend","count":1,"sum_units":"1500000","min":1.5,"max":1.5,"pos":[[1499136,1]],"exact":[1.5]}},` +
		`{"name":"x_op_duration{op:b}","sink":{"type":"trend","count":0,"sum_units":"0","min":0,"max":0,"pos":[]}}]}]}`
	if string(s1) != want {
		t.Fatalf("snapshot json\n got %s\nwant %s", s1, want)
	}
}

func TestConsumersReceiveEveryBatch(t *testing.T) {
	c, _, _, count := newTestCollector(t)
	var got recorder
	c.AddConsumer(&got)
	for i := 0; i < 100; i++ {
		c.Add(Sample{Metric: count, Time: t0, Value: float64(i)})
	}
	c.Flush()
	if len(got.samples) != 100 {
		t.Fatalf("consumer got %d samples", len(got.samples))
	}
}

type recorder struct {
	mu      sync.Mutex
	samples []Sample
}

func (r *recorder) AddSamples(s []Sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s...)
	r.mu.Unlock()
}

func TestExactPercentilesForSmallSinks(t *testing.T) {
	ts := NewTrendSink()
	vals := []float64{3.3, 1.1, 2.2, 9.9, 4.4, 5.5, 120.7, 0.001}
	for _, v := range vals {
		ts.Add(v, t0)
	}
	sort.Float64s(vals)
	for _, p := range []float64{0, 10, 50, 90, 95, 99, 100} {
		if got, want := ts.Percentile(p), exactPercentile(vals, p); got != want {
			t.Errorf("p(%v) = %v, want exactly %v", p, got, want)
		}
	}
}

// D10: a group by a high-cardinality tag keeps at most MaxGroupRows rows of
// its own, then one "(other)" row: memory bounded, every sample counted
// (the rows were unbounded).
func TestGroupRowsAreBounded(t *testing.T) {
	c, dur, _, _ := newTestCollector(t)
	if err := c.AddGroup("x_op_duration", "url"); err != nil {
		t.Fatal(err)
	}
	buf := c.NewBuffer()
	const n = MaxGroupRows + 500
	for i := 0; i < n; i++ {
		buf.Add(Sample{Metric: dur, Tags: NewTagSet(Tag{"url", fmt.Sprintf("/item/%d", i)}), Time: t0, Value: 1})
	}
	g := c.Snapshot(time.Second).Metric("x_op_duration").Group("url")
	if len(g.Rows) != MaxGroupRows+1 {
		t.Fatalf("%d rows, want %d and one (other)", len(g.Rows), MaxGroupRows+1)
	}
	last := g.Rows[len(g.Rows)-1]
	if last.Values[0] != OtherGroup {
		t.Fatalf("the last row is %v, want (other)", last.Values)
	}
	var total int64
	for _, r := range g.Rows {
		total += r.Sink.(*TrendSink).Count()
	}
	if total != n || last.Sink.(*TrendSink).Count() != 500 {
		t.Errorf("rows hold %d samples (other %d), want %d (500)", total, last.Sink.(*TrendSink).Count(), n)
	}
}
