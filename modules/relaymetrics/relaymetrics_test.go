package relaymetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const sample = `# TYPE buzz_events_stored_total counter
buzz_events_stored_total{author_type="human",kind="9"} 7
buzz_events_stored_total{author_type="agent",kind="9"} 2
# TYPE buzz_ws_connections_active gauge
buzz_ws_connections_active 4
# TYPE buzz_event_processing_seconds histogram
buzz_event_processing_seconds_bucket{le="0.01"} 3
buzz_event_processing_seconds_bucket{le="+Inf"} 5
buzz_event_processing_seconds_sum 0.2
buzz_event_processing_seconds_count 5
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12
`

func TestParseKeepsBuzzSeries(t *testing.T) {
	s, err := Parse(strings.NewReader(sample), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`buzz_events_stored_total{author_type="human",kind="9"}`: 7,
		`buzz_events_stored_total{author_type="agent",kind="9"}`: 2,
		`buzz_ws_connections_active`:                             4,
		`buzz_event_processing_seconds_count`:                    5,
		`buzz_event_processing_seconds_sum`:                      0.2,
	}
	if len(s.Values) != len(want) {
		t.Fatalf("kept %v", s.Values)
	}
	for k, v := range want {
		if s.Values[k] != v {
			t.Errorf("%s = %v, want %v", k, s.Values[k], v)
		}
	}
	if s.Series[`buzz_ws_connections_active`].Type != "gauge" || s.Series[`buzz_event_processing_seconds_count`].Type != "counter" {
		t.Errorf("types %v", s.Series)
	}
	if _, err := Parse(strings.NewReader("buzz_x{ 1\n"), time.Now()); err == nil {
		t.Error("a malformed exposition parsed")
	}
}

func TestParseSource(t *testing.T) {
	s, err := ParseSource("kubectl:buzz/app=buzz-relay,tier=a:9102")
	if err != nil || s.Namespace != "buzz" || s.Selector != "app=buzz-relay,tier=a" || s.Port != "9102" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"kubectl:buzz/app=x", "kubectl:/app=x:1", "relay:9102/metrics", "kubectl:buzz"} {
		if _, err := ParseSource(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestWatcherDeltasAcrossAReset: a counter's delta is its increase over
// the readings, a restart's reset counted from zero; a gauge's is end −
// start; a source that fails says so.
func TestWatcherDeltasAcrossAReset(t *testing.T) {
	var step atomic.Int64
	values := []int{5, 9, 2, 6} // a restart between 9 and 2: +4, +2, +4
	gauges := []int{1, 3, 0, 2}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := min(int(step.Load()), len(values)-1)
		fmt.Fprintf(w, "# TYPE buzz_events_stored_total counter\nbuzz_events_stored_total{kind=\"9\"} %d\n# TYPE buzz_ws_connections_active gauge\nbuzz_ws_connections_active %d\n", values[i], gauges[i])
	}))
	defer srv.Close()
	w := NewWatcher(Reader{}, time.Hour) // readings driven by hand below
	w.Add(Source{Spec: srv.URL, URL: srv.URL}, "")
	w.Add(Source{Spec: "http://127.0.0.1:1/metrics", URL: "http://127.0.0.1:1/metrics"}, "")
	for i := 1; i < len(values)-1; i++ {
		step.Store(int64(i))
		w.read(w.tracks[0])
	}
	step.Store(int64(len(values) - 1))
	rep := w.Finish()
	if d, ok := rep.Delta("buzz_events_stored_total"); !ok || d != 10 {
		t.Errorf("stored delta %v %v, want 10 (5→9, reset, 2→6)", d, ok)
	}
	if d, _ := rep.Delta("buzz_ws_connections_active"); d != 1 {
		t.Errorf("gauge delta %v, want 1", d)
	}
	if len(rep.Sources) != 2 || rep.Sources[0].Scrapes != 4 || rep.Sources[0].Resets != 1 || rep.Sources[1].Scrapes != 0 || rep.Sources[1].Error == "" {
		t.Errorf("sources %+v", rep.Sources)
	}
	if len(rep.Samples) != 4 || rep.Samples[3].Values["buzz_events_stored_total"] != 6 {
		t.Errorf("samples %+v", rep.Samples)
	}
}

// Settle returns once two readings agree on the events received and
// stored (the relay took the last in-flight publishes), and not before;
// a counter that keeps moving is given up on at the bound.
func TestSettleWaitsForTheRelayToStopTakingEvents(t *testing.T) {
	var reads atomic.Int64
	moving := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := reads.Add(1)
		v := min(n, 4) // the relay takes events for the first four readings
		if moving.Load() {
			v = n
		}
		fmt.Fprintf(w, "# TYPE buzz_events_received_total counter\nbuzz_events_received_total %d\n", v)
	}))
	defer srv.Close()
	w := NewWatcher(Reader{}, time.Hour)
	w.Add(Source{Spec: srv.URL, URL: srv.URL}, "") // reading 1
	if !w.Settle(context.Background(), time.Millisecond, 5*time.Second) {
		t.Fatal("did not settle")
	}
	if got := reads.Load(); got != 5 { // readings 2..4 move, 4 and 5 agree
		t.Fatalf("%d readings, want 5", got)
	}
	moving.Store(true)
	start := time.Now()
	if w.Settle(context.Background(), 10*time.Millisecond, 100*time.Millisecond) {
		t.Fatal("settled while the counter moved")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v past its bound", d)
	}
	w.Finish()
}
