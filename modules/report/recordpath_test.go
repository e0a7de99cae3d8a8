package report

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// recordPathResult is the j-th Result of the test's fixed set: ops over
// every stage of optsTOML (step 0 to 30 s, step 1 to 35 s, the shutdown
// after), some in flight over a stage's end, every outcome.
func recordPathResult(start time.Time, j int) relayclient.Result {
	ops := []string{"publish", "deliver", "subscribe_eose"}
	r := relayclient.Result{Op: ops[j%len(ops)], Start: start.Add(time.Duration(j*7919%40000) * time.Millisecond),
		Duration: time.Duration(j%700)*time.Millisecond + time.Duration(j%13)*time.Microsecond}
	switch j % 10 {
	case 7:
		r.Outcome, r.Error = relayclient.OutcomeError, "timeout"
	case 8:
		r.Outcome = relayclient.OutcomeThrottled
	case 9:
		r.Outcome, r.Error = relayclient.OutcomePending, "closed"
	default:
		r.Outcome = relayclient.OutcomeOK
	}
	return r
}

// Records from many sinks and goroutines at once land in several shards;
// the report and the windows merge them into exactly what one sink
// recording the same Results in sequence makes (counts, pending, and the
// percentiles: the histograms' merge is exact), with every operation
// started accounted for once.
func TestConcurrentRecordsAddUpToOneSequentialRecord(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	plan := []scenario.StepPlan{{Users: 1, RampEnd: 10 * time.Second, End: 30 * time.Second},
		{Users: 2, Start: 30 * time.Second, RampEnd: 33 * time.Second, End: 35 * time.Second}}
	const n, workers = 12000, 8
	seq, par := newRecorder(plan, start), newRecorder(plan, start)
	for j := 0; j < n; j++ {
		seq.record(recordPathResult(start, j), 0)
	}
	// Three phases of the Results: one goroutine recording with shard 0 of
	// the aggregator and of the windows busy, then with every other shard
	// busy (so at least two shards hold records whatever the cores; one
	// goroutine, as a record waits for its first shard when it finds none
	// free), then many goroutines with windows closing among the records.
	closed := make(chan WindowReport, 16)
	hold := func(busy func(i int) bool) func() {
		var held []*sync.Mutex
		for i := range par.a.shards {
			if busy(i) {
				held = append(held, &par.a.shards[i].mu, &par.w.shards[i].mu)
			}
		}
		for _, m := range held {
			m.Lock()
		}
		return func() {
			for _, m := range held {
				m.Unlock()
			}
		}
	}
	phase := func(from, to, workers int, closes bool) {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for j := from + w; j < to; j += workers {
					par.record(recordPathResult(start, j), w)
					if closes && w == 0 && j%(n/16) == 0 {
						closed <- par.w.Close(start.Add(time.Duration(j)*time.Millisecond), nil)
					}
				}
			}(w)
		}
		wg.Wait()
	}
	release := hold(func(i int) bool { return i == 0 })
	phase(0, n/3, 1, false)
	release()
	closed <- par.w.Close(start.Add(time.Minute), nil)
	release = hold(func(i int) bool { return i != 0 })
	phase(n/3, 2*n/3, 1, false)
	release()
	phase(2*n/3, n, workers, true)
	closed <- par.w.Close(start.Add(time.Hour), nil)
	close(closed)

	used := 0
	for i := range par.a.shards {
		if len(par.a.shards[i].cells) > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("the records used %d of %d shards: the test exercises no merge", used, len(par.a.shards))
	}

	want, got := seq.report(), par.report()
	for i := range want.Steps {
		w, _ := json.Marshal(want.Steps[i].Ops)
		g, _ := json.Marshal(got.Steps[i].Ops)
		if string(w) != string(g) {
			t.Errorf("step %d:\n got %s\nwant %s", i, g, w)
		}
	}
	w, _ := json.Marshal(want.Shutdown.Ops)
	g, _ := json.Marshal(got.Shutdown.Ops)
	if string(w) != string(g) {
		t.Errorf("shutdown:\n got %s\nwant %s", g, w)
	}

	// Every Result settled once and started once, over the steps and the
	// shutdown; the pending at a step's end are the started not settled.
	var started, settled int64
	for _, st := range got.Steps {
		for _, o := range st.Ops {
			started += o.Started
			settled += o.Count + o.Abandoned + o.Cut
		}
	}
	for _, o := range got.Shutdown.Ops {
		started += o.Started
		settled += o.Count + o.Abandoned + o.Cut
	}
	if started != n || settled != n {
		t.Errorf("started %d, settled %d of %d Results", started, settled, n)
	}

	// The windows hold every settled operation once, however the closes
	// fell among the records.
	counts := map[string]int64{}
	for wr := range closed {
		for op, o := range wr.Ops {
			counts[op] += o.Count
		}
	}
	ref := seq.w.Close(start.Add(time.Hour), nil)
	for op, o := range ref.Ops {
		if counts[op] != o.Count {
			t.Errorf("windows counted %d %s, want %d", counts[op], op, o.Count)
		}
	}
}

// recorder records Results as the extension's sinks do: by the stage of
// their settlement on the plan's timeline, in flight over the stage ends
// between their start and settlement.
type recorder struct {
	plan  []scenario.StepPlan
	start time.Time
	a     *Aggregator
	w     *Windows
}

func newRecorder(plan []scenario.StepPlan, start time.Time) *recorder {
	a := NewAggregator(&scenario.Scenario{}, plan)
	w := NewWindows(a)
	w.Begin(start, 0, start)
	return &recorder{plan: plan, start: start, a: a, w: w}
}

func (c *recorder) record(r relayclient.Result, home int) {
	end := r.Start.Add(r.Duration)
	stage := StageIndex(c.plan, end.Sub(c.start))
	startStage := min(StageIndex(c.plan, r.Start.Sub(c.start)), stage)
	var straddled []int
	for i := startStage; i < stage; i++ {
		straddled = append(straddled, i)
	}
	id := c.a.OpID(r.Op)
	c.w.AddID(id, home, r, end, false)
	c.a.RecordID(id, home, r, 0, startStage, stage, straddled, end)
}

func (c *recorder) report() *Report {
	in := Input{Plan: c.plan, Clients: make([]map[string]int, len(c.plan))}
	return Build(in, c.a.Totals())
}
