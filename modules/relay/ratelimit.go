package relay

import (
	"fmt"
	"sync"
	"time"
)

// limiter holds one community's quota logs per pubkey (docs/buzz-protocol.md §2.1):
// stored messages per 60 s by tier (WebSocket EVENTs only), HTTP API calls per
// 60 s (one rate for every caller: Buzz's api/bridge.rs enforce_http_admission
// uses human_api_calls_per_min for agents too), WS frames (EVENT, REQ, COUNT)
// per WSFrameWindow, observer frames per second per agent.
//
// Each quota is a sliding-window log, as Buzz's Redis limiter
// (crates/buzz-pubsub/src/rate_limiter.rs, buzz-auth/src/rate_limit.rs): at
// most limit admissions in any trailing window, a denied attempt is not
// logged, and "retry in Ns" is the time until the oldest admission leaves
// the window (rounded up).
type limiter struct {
	cfg   *Config
	epoch time.Time // log times are offsets from it (monotonic)
	mu    sync.Mutex
	keys  map[string]*keyBuckets
}

// slidingLog is a ring of the admission times still inside the window.
type slidingLog struct {
	times []time.Duration // offsets from the limiter's epoch; grows to the limit
	head  int
	n     int
}

type keyBuckets struct {
	msg, api, ws, observer slidingLog
	last                   time.Time
}

func newLimiter(cfg *Config) *limiter {
	return &limiter{cfg: cfg, epoch: time.Now(), keys: map[string]*keyBuckets{}}
}

func (l *limiter) bucket(pk string, now time.Time) *keyBuckets {
	b := l.keys[pk]
	if b == nil {
		b = &keyBuckets{}
		l.keys[pk] = b
	}
	b.last = now
	return b
}

// take admits one request at now if fewer than limit were admitted in the
// trailing size; otherwise it returns how long until the oldest leaves.
func (s *slidingLog) take(now time.Duration, size time.Duration, limit int) (time.Duration, bool) {
	for s.n > 0 && s.times[s.head] <= now-size {
		s.head = (s.head + 1) % len(s.times)
		s.n--
	}
	if s.n < limit {
		if len(s.times) < limit && s.n == len(s.times) {
			// Grow the ring in order (oldest first) so head restarts at 0.
			grown := make([]time.Duration, s.n, min(limit, max(4, 2*s.n)))
			for i := range s.n {
				grown[i] = s.times[(s.head+i)%len(s.times)]
			}
			s.times, s.head = grown[:cap(grown)], 0
		}
		s.times[(s.head+s.n)%len(s.times)] = now
		s.n++
		return 0, true
	}
	return s.times[s.head] + size - now, false
}

// take charges one unit of log at now; it returns the throttle reason or "".
func (l *limiter) take(log *slidingLog, now time.Time, size time.Duration, limit int) string {
	if left, ok := log.take(now.Sub(l.epoch), size, limit); !ok {
		return quotaExceeded(left)
	}
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

// frame charges the WS frame log.
func (l *limiter) frame(pk string, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.take(&l.bucket(pk, now).ws, now, l.cfg.WSFrameWindow, l.cfg.WSFramesPerWindow)
}

// message charges the stored-messages log (non-ephemeral WebSocket EVENTs).
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
	return l.take(&l.bucket(pk, now).msg, now, time.Minute, limit)
}

// api charges the HTTP API-call log (/events, /query, /count, /buzz/v1):
// one rate for every caller, agents included.
func (l *limiter) api(pk string, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.take(&l.bucket(pk, now).api, now, time.Minute, l.cfg.HumanAPICallsPerMin)
}

// observer charges an agent's observer-frame log (100/s by default).
func (l *limiter) observer(agent string, now time.Time) string {
	if !l.cfg.RateLimit {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.take(&l.bucket(agent, now).observer, now, time.Second, l.cfg.ObserverFramesPerSec) != "" {
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
