package models

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff paces reconnects after failed sessions (a 1012 "relay
// restarting" included): full jitter over an exponentially growing
// ceiling, Base·2^(failures−1) up to Max. Buzz's people use its desktop
// app, whose socket reconnects after 500 ms × 2^attempt
// (src/features/relay/native-socket.ts, ../shared/docs/desktop-requests.md
// "Reconnect backoff"); it gives up after 5 attempts until a manual retry,
// which a person makes, so a human here keeps retrying under the 30 s cap.
// The jitter spreads a restart's herd as BUZZ_DRAIN_JITTER_MS does on the
// relay's side.
type Backoff struct {
	Base time.Duration // default 500 ms
	Max  time.Duration // default 30 s
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	return b
}

// Delay is the ceiling of the wait before attempt number failures+1.
func (b Backoff) Delay(failures int) time.Duration {
	b = b.withDefaults()
	if failures <= 0 {
		return 0
	}
	d := b.Base
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

type backoffState struct {
	cfg      Backoff
	failures int
	atLeast  time.Duration // the relay's retry hint for the next attempt
}

func (b *backoffState) failed() { b.failures++ }
func (b *backoffState) reset()  { b.failures, b.atLeast = 0, 0 }

// wait sleeps the jittered backoff (at least the relay's retry hint);
// false when stop came first.
func (b *backoffState) wait(stop context.Context, rng *rand.Rand) bool {
	ceil := b.cfg.Delay(b.failures)
	if ceil <= 0 && b.atLeast <= 0 {
		return true
	}
	d := b.atLeast
	if ceil > 0 {
		d = max(d, time.Duration(rng.Int64N(int64(ceil))+1))
	}
	b.atLeast = 0
	return waitUntil(stop, nil, time.Now(), d)
}
