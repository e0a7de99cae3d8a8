package report

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	halves "github.com/buzzload/buzzload/engine/downsample"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// A long run speaks while it runs (issue 13): every report interval the
// operations settled since the previous window are printed as a compact
// block and kept for the report's JSON.

// MaxWindows bounds the Windows a report keeps: 720 is 12 hours at 60 s.
// When full, the oldest half is merged pairwise (downsampling), so memory
// stays flat however long the run and the report still spans all of it.
const MaxWindows = 720

// DefaultReportInterval is the window length of a run: 10 s under 10
// minutes, 60 s above (as the soak tool's periodic report).
func DefaultReportInterval(run time.Duration) time.Duration {
	if run < 10*time.Minute {
		return 10 * time.Second
	}
	return time.Minute
}

// WindowOp is one operation's numbers in a window.
type WindowOp struct {
	Count     int64   `json:"count"` // settled: ok + errors + throttled
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"` // for the HTML report's plots (issue 14)
	P99Ms     float64 `json:"p99_ms"`
	Errors    int64   `json:"errors"`
	Throttled int64   `json:"throttled"`
	DueP99Ms  float64 `json:"due_p99_ms,omitempty"` // scheduled ops: p99 from the due time (issue 14)
	LagP99Ms  float64 `json:"lag_p99_ms,omitempty"` // scheduled ops: p99 of due → sent
}

// WindowReport is one report interval. Merged counts how many intervals it
// holds (1 until downsampling merges it with a neighbour; then p50 is the
// count-weighted mean of the merged p50s and p99 the largest p99, an
// approximation the counts do not share).
type WindowReport struct {
	StartS  float64              `json:"start_s"`
	EndS    float64              `json:"end_s"`
	Merged  int                  `json:"merged,omitempty"`
	Warmup  bool                 `json:"warmup,omitempty"`
	Clients map[string]int64     `json:"clients"`
	Ops     map[string]*WindowOp `json:"ops"`
	// RSSMB is the generator's resident memory when the window closed (0:
	// not read), for the drift check (drift.go).
	RSSMB float64 `json:"rss_mb,omitempty"`
}

// Windows is the current window and the closed ones of a loaded scenario.
// The current window is counted in shards as the Aggregator's stages are
// (aggregate.go), merged when it closes.
type Windows struct {
	ops    *opTable // the Aggregator's: a record resolves one id for both
	shards []winShard
	warm   atomic.Bool // the current window holds warm-up samples

	mu     sync.Mutex
	start  time.Time // the population scenarios' start ("" until then)
	from   time.Time // the current window's start
	closed []WindowReport
	rssMB  float64 // NoteRSS: the next window's
}

// NoteRSS gives the generator's resident memory for the window about to
// close (read at the edge, by the caller).
func (w *Windows) NoteRSS(mb float64) {
	w.mu.Lock()
	w.rssMB = mb
	w.mu.Unlock()
}

// winShard is one shard of the current window.
type winShard struct {
	mu  sync.Mutex
	cur []*OpAgg // [op id]; nil: none settled in this shard
	_   [64]byte
}

// NewWindows counts Windows of the operations a's records name.
func NewWindows(a *Aggregator) *Windows {
	return &Windows{ops: &a.ops, shards: make([]winShard, recShards())}
}

// Begin starts the Windows at the population scenarios' start (once; ok
// false after): the first window begins at the grid point start + k·every
// before now, so the instances of a distributed run (started together,
// their first clients at different moments) have the same Windows to
// merge. It returns that first window's start.
func (w *Windows) Begin(start time.Time, every time.Duration, now time.Time) (from time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.start.IsZero() {
		return time.Time{}, false
	}
	from = start
	for every > 0 && !from.Add(every).After(now) {
		from = from.Add(every)
	}
	w.start, w.from = start, from
	return from, true
}

// AddID counts one settled operation of op id (Aggregator.OpID) in the
// current window, trying shard home first.
func (w *Windows) AddID(id, home int, r relayclient.Result, at time.Time, warmup bool) {
	if warmup && !w.warm.Load() {
		w.warm.Store(true)
	}
	sh := &w.shards[lockFree(len(w.shards), home, func(i int) *sync.Mutex { return &w.shards[i].mu })]
	opAt(&sh.cur, id).add(r, at)
	sh.mu.Unlock()
}

// take empties the current window and returns what it held by op (w.mu held).
func (w *Windows) take() map[string]*OpAgg {
	out := map[string]*OpAgg{}
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		cur := sh.cur
		sh.cur = nil
		names := w.ops.list() // after the lock: it names every id in cur
		sh.mu.Unlock()
		for id, o := range cur {
			if o == nil {
				continue
			}
			if m := out[names[id]]; m != nil {
				m.merge(o)
			} else {
				out[names[id]] = o
			}
		}
	}
	return out
}

// Empty reports whether nothing settled in the current window.
func (w *Windows) Empty() bool {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		n := len(sh.cur)
		sh.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	return true
}

// Close ends the current window at now with the clients live then; an
// Empty window is kept too (a silent interval is news in a long run).
func (w *Windows) Close(now time.Time, live map[string]int64) WindowReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.take()
	wr := WindowReport{StartS: round3(w.from.Sub(w.start).Seconds()), EndS: round3(now.Sub(w.start).Seconds()),
		Warmup: w.warm.Swap(false), Clients: live, Ops: map[string]*WindowOp{}, RSSMB: w.rssMB}
	w.rssMB = 0
	for op, a := range cur {
		r := a.report()
		wr.Ops[op] = &WindowOp{Count: r.Count, P50Ms: r.P50Ms, P95Ms: r.P95Ms, P99Ms: r.P99Ms, Errors: r.Errors, Throttled: r.Throttled,
			DueP99Ms: r.DueP99Ms, LagP99Ms: r.LagP99Ms}
	}
	w.from = now
	w.closed = append(w.closed, wr)
	if len(w.closed) >= MaxWindows {
		w.closed = downsample(w.closed)
	}
	return wr
}

// downsample merges the older half of the Windows pairwise.
func downsample(ws []WindowReport) []WindowReport { return halves.OlderHalf(ws, mergeWindows) }

func mergeWindows(a, b WindowReport) WindowReport {
	m := WindowReport{StartS: a.StartS, EndS: b.EndS, Merged: max(a.Merged, 1) + max(b.Merged, 1),
		Warmup: a.Warmup || b.Warmup, Clients: b.Clients, Ops: map[string]*WindowOp{}, RSSMB: max(a.RSSMB, b.RSSMB)}
	for _, w := range []WindowReport{a, b} {
		for op, o := range w.Ops {
			addWindowOp(m.Ops, op, o)
		}
	}
	return m
}

// addWindowOp adds o to ops[op]: counts add, p50 is the mean of the two
// weighted by their successes (what it is a percentile of), the other
// percentiles the larger (an upper bound). Adjacent Windows merge so
// (downsampling), and the same window of a distributed run's instances
// (MergeReports).
func addWindowOp(ops map[string]*WindowOp, op string, o *WindowOp) {
	cur := ops[op]
	if cur == nil {
		cp := *o
		ops[op] = &cp
		return
	}
	okA, okB := cur.Count-cur.Errors-cur.Throttled, o.Count-o.Errors-o.Throttled
	if okA+okB > 0 {
		cur.P50Ms = round3((cur.P50Ms*float64(okA) + o.P50Ms*float64(okB)) / float64(okA+okB))
	}
	cur.P95Ms = max(cur.P95Ms, o.P95Ms)
	cur.DueP99Ms, cur.LagP99Ms = max(cur.DueP99Ms, o.DueP99Ms), max(cur.LagP99Ms, o.LagP99Ms)
	cur.P99Ms = max(cur.P99Ms, o.P99Ms)
	cur.Count += o.Count
	cur.Errors += o.Errors
	cur.Throttled += o.Throttled
}

// List returns the closed Windows.
func (w *Windows) List() []WindowReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WindowReport(nil), w.closed...)
}

// startWindows begins the Windows at the population scenarios' start
// (once): a ticker closes one every interval and prints it to the console.
// Started reports whether a client has started (startWindows ran): the
// relay was used, so the end-of-run checks have something to check.
func (w *Windows) Started() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.start.IsZero()
}

// Start is the population scenarios' start (zero before it).
func (w *Windows) Start() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.start
}

// PrintWindowsFrom is the shortest run whose window blocks are printed
// without --report-interval.
const PrintWindowsFrom = 2 * time.Minute

// LiveClients is the clients in a session by kind.
func (a *Aggregator) LiveClients() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int64{}
	for k, n := range a.live {
		if n > 0 {
			out[scenario.Kind(k).String()] = n
		}
	}
	return out
}

// Text is the compact block printed every interval.
func (w WindowReport) Text(runID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  buzz %s window %s–%s", tc(runID), secs(w.StartS), secs(w.EndS))
	var cl []string
	for _, k := range []string{"human", "desktop", "agent", "hot_author"} {
		if n := w.Clients[k]; n > 0 {
			cl = append(cl, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(cl) == 0 {
		cl = append(cl, "no clients")
	}
	fmt.Fprintf(&b, "  clients: %s", strings.Join(cl, ", "))
	if w.Warmup {
		b.WriteString("  (warm-up: not judged)")
	}
	b.WriteString("\n")
	if len(w.Ops) == 0 {
		b.WriteString("    nothing settled\n")
		return b.String()
	}
	fmt.Fprintf(&b, "    %-22s %8s %9s %9s %7s %6s\n", "op", "count", "p50 ms", "p99 ms", "errors", "thr")
	for _, op := range SortedOps(w.Ops) {
		o := w.Ops[op]
		fmt.Fprintf(&b, "    %-22s %8d %9.1f %9.1f %7d %6d\n", tc(op), o.Count, o.P50Ms, o.P99Ms, o.Errors, o.Throttled)
	}
	return b.String()
}
