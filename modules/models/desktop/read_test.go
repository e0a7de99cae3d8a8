package desktop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// Every desktop read is bounded by the read timeout, 30 s unless set
// (docs/desktop-requests.md: "6 concurrent reads with a 30 s timeout"): a
// reply slower than it is an error of the read's op. Mutants "the read
// timeout passed neither to the HTTP client nor to the request" (the reads
// wait out the slow relay and succeed) and "DefaultReadTimeout 60 s" fail.
func TestReadsAreBoundedByTheReadTimeout(t *testing.T) {
	if DefaultReadTimeout != 30*time.Second {
		t.Errorf("DefaultReadTimeout %v, want 30s", DefaultReadTimeout)
	}
	e := newE2E(t, 5)
	c, err := New(Config{Params: e.params(ModeCurrent), Target: e.target, Keys: e.keys, Channels: e.chans})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.ReadTimeout != DefaultReadTimeout {
		t.Errorf("unset ReadTimeout is %v, want %v", c.cfg.ReadTimeout, DefaultReadTimeout)
	}

	e.relay.Faults().SetHTTPLatency(time.Second)
	c, err = New(Config{Params: e.params(ModeCurrent), Target: e.target, Keys: e.keys, Channels: e.chans,
		Sink: e.sink, ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	var read *relayclient.Result
	waitfor.Until(t, "a metadata read", 5*time.Second, func() bool {
		for _, r := range e.sink.Results() {
			if r.Op == OpMetadata {
				read = &r
				return true
			}
		}
		return false
	})
	if read.Outcome != relayclient.OutcomeError || !strings.Contains(read.Error, "within 200ms") {
		t.Fatalf("metadata read against a 1 s relay: %v %q, want the 200ms timeout", read.Outcome, read.Error)
	}
	if read.Duration > 900*time.Millisecond {
		t.Errorf("the read took %v, past its timeout", read.Duration)
	}
}
