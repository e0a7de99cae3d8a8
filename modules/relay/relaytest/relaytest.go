// Package relaytest starts the embedded relay for a test of another
// package: on 127.0.0.1 with a free port, rate limits off unless the test
// turns them on, a short drain, closed when the test ends. It is a normal
// package so every package's tests share one fixture; only tests import it.
// (modules/relay's own tests keep an internal copy: importing this from
// package relay would be a cycle.)
package relaytest

import (
	"context"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relay"
)

// Start runs a relay for t. mutate, when set, adjusts the configuration
// after the test defaults (loopback, RateLimit off, DrainOnClose 100 ms).
func Start(t testing.TB, mutate func(*relay.Config)) *relay.Relay {
	t.Helper()
	cfg := relay.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.RateLimit = false
	cfg.DrainOnClose = 100 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = r.Close()
	})
	return r
}
