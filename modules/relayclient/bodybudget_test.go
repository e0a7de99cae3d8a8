package relayclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// An announced body above the cap is refused before a byte of it is read,
// and bodies in flight through one pool hold at most its budget: the one
// that would pass it is an error saying so, and the budget comes back once
// the bodies are done (reliability.md F10: 25 MB per request in flight).
// Fails without the Content-Length check and WithBodyBudget.
func TestBodiesInFlightAreBounded(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge":
			w.Header().Set("Content-Length", strconv.Itoa(100<<20))
			_, _ = w.Write([]byte("[")) // then nothing: the client must not wait for the rest
		case "/held":
			// 600 KiB, then the body stays open until the test lets go.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("[" + strings.Repeat(" ", 600<<10)))
			w.(http.Flusher).Flush()
			<-hold
			_, _ = w.Write([]byte("]"))
		default:
			_, _ = w.Write([]byte("[" + strings.Repeat(" ", 600<<10) + "]"))
		}
	}))
	defer srv.Close()
	defer close(hold)
	tr, err := NewTransport(TransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := WithBodyBudget(tr, 1<<20)
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: srv.URL}, Transport: pool, MaxBodyBytes: 16 << 20})

	_, r := h.Do(context.Background(), Request{Op: "huge", Path: "/huge", Unsigned: true})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "body of 104857600 bytes larger than 16777216 bytes") || r.BytesReceived != 0 {
		t.Fatalf("announced 100 MB body: %+v", r)
	}

	held := make(chan Result, 1)
	go func() {
		_, r := h.Do(context.Background(), Request{Op: "held", Path: "/held", Unsigned: true})
		held <- r
	}()
	// Wait until the held body's 600 KiB are counted against the budget.
	bt := pool.(*budgetTransport)
	waitfor.Until(t, "the held body counted", 10*time.Second, func() bool {
		select {
		case r := <-held:
			t.Fatalf("the held request ended early: %+v", r)
		default:
		}
		return bt.used.Load() >= 600<<10
	})
	_, r = h.Do(context.Background(), Request{Op: "second", Path: "/", Unsigned: true})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "response bodies in flight exceed the run's budget (1 MiB)") {
		t.Fatalf("a body beyond the budget: %+v", r)
	}
	hold <- struct{}{}
	if r := <-held; r.Outcome != OutcomeOK {
		t.Fatalf("the held request: %+v", r)
	}
	if n := bt.used.Load(); n != 0 {
		t.Fatalf("%d bytes still counted after every body closed", n)
	}
	if _, r = h.Do(context.Background(), Request{Op: "after", Path: "/", Unsigned: true}); r.Outcome != OutcomeOK {
		t.Fatalf("the budget did not come back: %+v", r)
	}
}
