package seed

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
)

// A throttled publish waits the relay's retry-in and is resent with a fresh
// signature; one throttled more often than allowed is reported with the
// relay's reason.
func TestPublishRetryPolicy(t *testing.T) {
	var calls, throttleFirst atomic.Int64
	var always atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if always.Load() || n <= throttleFirst.Load() {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate-limited: quota exceeded; retry in 1s"}`)
			return
		}
		fmt.Fprint(w, `{"event_id":"x","accepted":true,"message":""}`)
	}))
	defer srv.Close()
	var sink relayclienttest.CollectSink
	n, err := newRPC(nil, &sink, nil, 5*time.Second, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	k, _ := nostr.GenerateKeys()
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: "ws" + strings.TrimPrefix(srv.URL, "http"), HTTPURL: srv.URL}, Keys: k, Sink: &sink})
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	build := func(at time.Time) (*nostr.Event, error) {
		builds++
		return k.NewEvent(nostr.KindStreamMessage, [][]string{{"h", "x"}}, "m", at)
	}
	throttleFirst.Store(1)
	start := time.Now()
	pub, err := n.publish(context.Background(), h, OpHistory, build)
	if err != nil || pub.why != "" || pub.ev == nil || builds != 2 {
		t.Fatalf("throttled once: %+v %v, %d builds", pub, err, builds)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("resent after %v, before the relay's retry-in", d)
	}
	if sink.Count(OpHistory, relayclient.OutcomeThrottled) != 1 || sink.Count(OpHistory, relayclient.OutcomeOK) != 1 {
		t.Fatalf("sink %v", sink.Op(OpHistory))
	}

	always.Store(true)
	pub, err = n.publish(context.Background(), h, OpHistory, build)
	if err != nil || pub.ev != nil || !strings.HasPrefix(pub.why, "rate-limited: quota exceeded") {
		t.Fatalf("always throttled: %+v %v", pub, err)
	}

	// Cancelling during the wait returns the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := n.publish(ctx, h, OpHistory, build); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
}

func TestReasonTrimsToTheRelaysWords(t *testing.T) {
	for in, want := range map[string]string{
		"POST /events: HTTP 400: restricted: member refused":              "restricted: member refused",
		"POST /events: not accepted: invalid: reply parent not found":     "invalid: reply parent not found",
		"POST /operator/communities: HTTP 409: community already exists":  "community already exists",
		"POST /events: dial tcp 127.0.0.1:1: connect: connection refused": "dial tcp 127.0.0.1:1: connect: connection refused",
	} {
		r := relayclient.Result{Outcome: relayclient.OutcomeError, Error: in}
		if got := reason(r); got != want {
			t.Errorf("reason(%q) = %q, want %q", in, got, want)
		}
	}
	if !refused(relayclient.Result{Outcome: relayclient.OutcomeError, Error: "POST /events: HTTP 403: restricted: x"}) ||
		refused(relayclient.Result{Outcome: relayclient.OutcomeError, Error: "POST /events: HTTP 503: rate-limited: shared admission unavailable"}) {
		t.Error("refused() misclassifies")
	}
}
