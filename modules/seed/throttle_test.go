package seed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// throttlingRelay answers every request with 429 and Buzz's quota text, as a
// relay whose limits the seeding identities can never get under.
func throttlingRelay(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"rate-limited: quota exceeded; retry in 1s"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func openScenario(t *testing.T, srv *httptest.Server) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("throttled.toml", []byte(fmt.Sprintf(`run_id = "throttled"
[target]
ws_url = %q
http_url = %q
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 3
seed_concurrency = 2
[population]
humans = 2
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`, "ws"+strings.TrimPrefix(srv.URL, "http"), srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A relay that answers 429 forever ends the seed once nothing but throttles
// came back for ThrottleTimeout: a *ThrottledError that says so, a failed
// result, and no more requests after it. Before, each request was resent
// up to 120 times a minute apart, so this seed ran for hours.
func TestSeedThrottledForeverGivesUp(t *testing.T) {
	srv, calls := throttlingRelay(t)
	sc := openScenario(t, srv)
	start := time.Now()
	res, err := Seed(context.Background(), sc, Options{Sink: relayclient.NopSink{}, ThrottleTimeout: 2 * time.Second})
	elapsed := time.Since(start)
	var te *ThrottledError
	if !errors.As(err, &te) || te.Throttled < 2 {
		t.Fatalf("err = %v, want a *ThrottledError", err)
	}
	if !strings.Contains(err.Error(), "throttled") || !strings.Contains(err.Error(), "429") {
		t.Fatalf("message %q does not say the seed was throttled", err)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("gave up after %v, want about the 2 s throttle timeout", elapsed)
	}
	if res == nil || res.OK() || !strings.Contains(res.Error, "throttled") {
		t.Fatalf("result %+v", res)
	}
	// A request the seed cancelled as it returned may still reach the
	// server a moment later; a retry would come a second later ("retry in
	// 1s"), so count from 200 ms after the return.
	time.Sleep(200 * time.Millisecond) // a negative check's window: a request cancelled at the return may still land
	n := calls.Load()
	time.Sleep(1500 * time.Millisecond) // a negative check: no retry comes in its interval (1 s)
	if calls.Load() != n {
		t.Fatalf("requests went on after the seed returned (%d → %d)", n, calls.Load())
	}
}

// A seed throttled into its own deadline, or into the caller's (the run's
// 10-minute setup timeout), says it was throttled instead of a bare timeout.
func TestSeedThrottledIntoATimeoutSaysSo(t *testing.T) {
	srv, _ := throttlingRelay(t)
	sc := openScenario(t, srv)

	_, err := Seed(context.Background(), sc, Options{Deadline: 1500 * time.Millisecond, ThrottleTimeout: -1})
	var de *DeadlineError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "the seed was throttled") {
		t.Fatalf("own deadline: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = Seed(ctx, sc, Options{ThrottleTimeout: -1})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the seed was throttled") {
		t.Fatalf("caller's timeout: %v", err)
	}
}
