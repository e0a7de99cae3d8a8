package relay

import (
	"fmt"
	"sync"
	"time"
)

// limiter holds one community's quota buckets per pubkey (docs/buzz-protocol.md §2.1):
// stored messages and HTTP API calls per 60 s by tier, WS frames (EVENT,
// REQ, COUNT) per WSFrameWindow, observer frames per second per agent.
// Windows are fixed, so "retry in Ns" is the time to the window's end.
type limiter struct {
	cfg  *Config
	mu   sync.Mutex
	keys map[string]*keyBuckets
}

type window struct {
	start time.Time
	n     int
}

type keyBuckets struct {
	msg, api, ws, observer window
	last                   time.Time
}

func newLimiter(cfg *Config) *limiter { return &limiter{cfg: cfg, keys: map[string]*keyBuckets{}} }

func (l *limiter) bucket(pk string, now time.Time) *keyBuckets {
	b := l.keys[pk]
	if b == nil {
		b = &keyBuckets{}
		l.keys[pk] = b
	}
	b.last = now
	return b
}

// take charges one unit; it returns the throttle reason or "".
func take(w *window, now time.Time, size time.Duration, limit int) string {
	if now.Sub(w.start) >= size || now.Before(w.start) {
		w.start, w.n = now, 0
	}
	if w.n >= limit {
		return quotaExceeded(w.start.Add(size).Sub(now))
	}
	w.n++
	return ""
}

// quotaExceeded formats Buzz's quota text: whole seconds, at least 1, no
// space before the s.
func quotaExceeded(left time.Duration) string {
	secs := int((left + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprintf("rate-limited: quota exceeded; retry in %ds", secs)
}

// frame charges the WS frame bucket.
func (l *limiter) frame(pk string, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return take(&l.bucket(pk, now).ws, now, l.cfg.WSFrameWindow, l.cfg.WSFramesPerWindow)
}

// message charges the stored-messages bucket (non-ephemeral EVENTs only).
func (l *limiter) message(pk string, agent bool, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	limit := l.cfg.HumanMessagesPerMin
	if agent {
		limit = l.cfg.AgentMessagesPerMin
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return take(&l.bucket(pk, now).msg, now, time.Minute, limit)
}

// api charges the HTTP API-call bucket (/events, /query, /count, /buzz/v1).
func (l *limiter) api(pk string, agent bool, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	limit := l.cfg.HumanAPICallsPerMin
	if agent {
		limit = l.cfg.AgentAPICallsPerMin
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return take(&l.bucket(pk, now).api, now, time.Minute, limit)
}

// observer charges an agent's observer-frame bucket (100/s by default).
func (l *limiter) observer(agent string, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if take(&l.bucket(agent, now).observer, now, time.Second, l.cfg.ObserverFramesPerSec) != "" {
		return fmt.Sprintf("rate-limited: observer frame rate exceeded (%d/sec per agent)", l.cfg.ObserverFramesPerSec)
	}
	return ""
}

// prune forgets keys idle for longer than every window.
func (l *limiter) prune(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pk, b := range l.keys {
		if now.Sub(b.last) > 2*time.Minute {
			delete(l.keys, pk)
		}
	}
}

// replayCache accepts each NIP-98 event id once per window (docs/buzz-protocol.md §3.2).
type replayCache struct {
	window time.Duration
	mu     sync.Mutex
	seen   map[string]time.Time
}

func newReplayCache(w time.Duration) *replayCache {
	return &replayCache{window: w, seen: map[string]time.Time{}}
}

// check records id and reports whether it was already seen in the window.
func (c *replayCache) check(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[id]; ok && now.Before(exp) {
		return true
	}
	c.seen[id] = now.Add(c.window)
	return false
}

func (c *replayCache) prune(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, exp := range c.seen {
		if !now.Before(exp) {
			delete(c.seen, id)
		}
	}
}
