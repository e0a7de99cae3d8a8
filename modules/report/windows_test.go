package report

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
)

var windowOps = []string{"connect", "auth", "subscribe_eose", "history", "publish", "deliver", "http_query",
	"http_events", "hot_reply", "thread_fetch", "turn_context", "desktop_window", "desktop_roster", "desktop_unread"}

// fill adds n windows of every op to w, each op settling per times (one
// error in each), closing one window per step from at.
func fill(w *Windows, at time.Time, step time.Duration, n, per int) time.Time {
	for i := 0; i < n; i++ {
		for _, op := range windowOps {
			for j := 0; j < per; j++ {
				r := relayclient.Result{Op: op, Outcome: relayclient.OutcomeOK, Duration: time.Duration(j+1) * time.Millisecond}
				if j == 0 {
					r = relayclient.Result{Op: op, Outcome: relayclient.OutcomeError, Error: "HTTP 503 after 12ms"}
				}
				w.AddID(w.ops.id(r.Op), 0, r, at, false)
			}
		}
		at = at.Add(step)
		w.Close(at, map[string]int64{"human": 3})
	}
	return at
}

// However long the run, the windows stay at most MaxWindows, cover it from
// its start to its end without gaps, and lose no operation.
func TestWindowsStayBoundedAndCoverTheRun(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	w := &Windows{ops: &opTable{}, shards: make([]winShard, recShards())}
	w.start, w.from = start, start
	const n, per = 5 * MaxWindows, 3
	end := fill(w, start, time.Second, n, per)
	ws := w.List()
	if len(ws) > MaxWindows || len(ws) < MaxWindows/2 {
		t.Fatalf("%d windows after %d intervals", len(ws), n)
	}
	if ws[0].StartS != 0 || ws[len(ws)-1].EndS != end.Sub(start).Seconds() {
		t.Errorf("windows span %v–%v, run %v", ws[0].StartS, ws[len(ws)-1].EndS, end.Sub(start).Seconds())
	}
	var count, errs int64
	merged := 0
	for i, x := range ws {
		if i > 0 && x.StartS != ws[i-1].EndS {
			t.Fatalf("gap between window %d (end %v) and %d (start %v)", i-1, ws[i-1].EndS, i, x.StartS)
		}
		merged += max(x.Merged, 1)
		count += x.Ops["publish"].Count
		errs += x.Ops["publish"].Errors
	}
	if merged != n || count != n*per || errs != n {
		t.Errorf("windows hold %d intervals, %d publishes, %d errors; want %d, %d, %d", merged, count, errs, n, n*per, n)
	}
	if last := ws[len(ws)-1]; last.Merged != 0 || last.Ops["publish"].P99Ms < 2.95 || last.Ops["publish"].P99Ms > 3.05 {
		t.Errorf("the newest window is merged or wrong: %+v", last.Ops["publish"])
	}
}

func TestWindowText(t *testing.T) {
	wr := WindowReport{StartS: 10, EndS: 20, Warmup: true, Clients: map[string]int64{"human": 4, "agent": 1},
		Ops: map[string]*WindowOp{"publish": {Count: 12, P50Ms: 1.25, P99Ms: 9.5, Errors: 2, Throttled: 1}}}
	got := wr.Text("r1")
	for _, want := range []string{"buzz r1 window 10s–20s", "clients: 4 human, 1 agent", "(warm-up: not judged)",
		"publish", "12", "1.2", "9.5"} {
		if !strings.Contains(got, want) {
			t.Errorf("block lacks %q:\n%s", want, got)
		}
	}
}

func TestDefaultReportInterval(t *testing.T) {
	if DefaultReportInterval(9*time.Minute) != 10*time.Second || DefaultReportInterval(10*time.Minute) != time.Minute {
		t.Error("want 10 s under 10 minutes, 60 s from 10 minutes")
	}
}

func rssKB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / 1024
}

// BenchmarkWindowsTwelveHours closes the windows of a 12-hour run at
// 10-second intervals (4,320 windows of 14 operations, past MaxWindows six
// times over; the 60 s default makes 720) and reports the heap and RSS
// after the first hour and after the twelfth: flat, since the windows are
// downsampled at MaxWindows.
func BenchmarkWindowsTwelveHours(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Unix(1_700_000_000, 0)
		w := &Windows{ops: &opTable{}, shards: make([]winShard, recShards())}
		w.start, w.from = start, start
		at := fill(w, start, 10*time.Second, 360, 4)
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		rss1 := rssKB()
		fill(w, at, 10*time.Second, 11*360, 4)
		runtime.GC()
		var m12 runtime.MemStats
		runtime.ReadMemStats(&m12)
		b.ReportMetric(float64(m1.HeapAlloc)/1024, "heap-1h-KB")
		b.ReportMetric(float64(m12.HeapAlloc)/1024, "heap-12h-KB")
		b.ReportMetric(rss1, "rss-1h-KB")
		b.ReportMetric(rssKB(), "rss-12h-KB")
		b.ReportMetric(float64(len(w.List())), "windows")
	}
}
