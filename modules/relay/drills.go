package relay

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// Drills (issue 42): the relay does to its clients what a Buzz deployment
// does at a deploy or an outage, on demand, so a run can measure what
// happens to people. Reachable through the Go API (the extension's
// declared drills) and `buzzload relay`'s operator route (drillroute.go).

// Restart drills a graceful restart as Buzz performs one (docs/buzz-names.md
// §g, block/buzz crates/buzz-relay/src/main.rs serve, state.rs
// restart_close_frame): every live socket gets close 1012 "relay
// restarting" — at once, or each after its own delay drawn from [1, jitter]
// ms as BUZZ_DRAIN_JITTER_MS spreads them (drain_all_jittered) — and for
// down the relay is not there: a WebSocket upgrade or an HTTP request gets
// 503 "relay restarting" (a restarted Buzz's listener is closed; 503 is
// what its load balancer answers meanwhile). The store is kept, as a
// restarted Buzz keeps its database. It returns the sockets it closed.
func (r *Relay) Restart(down, jitter time.Duration) int {
	until := time.Now().Add(down).UnixNano()
	r.downUntil.Store(until)
	return r.drainAll(jitter)
}

// drainAll closes every live socket with 1012 "relay restarting", each
// after its own delay drawn from [1, jitter] ms when jitter is set
// (drain_all_jittered), and returns how many.
func (r *Relay) drainAll(jitter time.Duration) int {
	n := 0
	for _, c := range r.allCommunities() {
		c.connMu.Lock()
		list := make([]*conn, 0, len(c.conns))
		for k := range c.conns {
			list = append(list, k)
		}
		c.connMu.Unlock()
		for _, k := range list {
			n++
			if ms := jitter.Milliseconds(); ms > 0 {
				d := time.Duration(1+rand.Int64N(ms)) * time.Millisecond
				time.AfterFunc(d, func() { k.closeWith(websocket.CloseServiceRestart, "relay restarting") })
				continue
			}
			k.closeWith(websocket.CloseServiceRestart, "relay restarting")
		}
	}
	return n
}

// DrillRequest is the body of POST /operator/drill: `buzzload relay`'s
// drills at run time, for a relay in its own process (the operator's
// NIP-98 key signs it, as every operator route).
type DrillRequest struct {
	Kind         string  `json:"kind"`
	DurationSecs float64 `json:"duration_secs"`
	JitterSecs   float64 `json:"jitter_secs"`
	DelayMs      float64 `json:"delay_ms"`
}

// opDrill performs a DrillRequest and answers {"kind", "sockets"}.
func (r *Relay) opDrill(w http.ResponseWriter, body []byte) {
	var in DrillRequest
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid drill: "+err.Error())
		return
	}
	secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	if in.DurationSecs < 0 || in.JitterSecs < 0 || in.JitterSecs > 20 || in.DelayMs < 0 {
		writeJSONError(w, http.StatusBadRequest, "invalid drill: durations must be ≥ 0, jitter_secs ≤ 20")
		return
	}
	n := 0
	switch in.Kind {
	case "restart":
		n = r.Restart(secs(in.DurationSecs), secs(in.JitterSecs))
	case "stall":
		n = r.Stall(secs(in.DurationSecs))
	case "limiter_outage":
		r.LimiterOutage(secs(in.DurationSecs))
	case "slow_store":
		delay := in.DelayMs
		if delay == 0 {
			delay = 200
		}
		r.SlowStore(secs(in.DurationSecs), time.Duration(delay*float64(time.Millisecond)))
	default:
		writeJSONError(w, http.StatusBadRequest, "invalid drill: kind must be restart, stall, limiter_outage or slow_store")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": in.Kind, "sockets": n})
}

// down reports whether a Restart drill holds the relay down now.
func (r *Relay) down() bool {
	u := r.downUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// serveDown answers a request while the relay is down.
func serveDown(w http.ResponseWriter) {
	http.Error(w, "relay restarting", http.StatusServiceUnavailable)
}

// Stall drills a relay that stops writing (a paused process, a saturated
// event loop): for d, no socket is written to — deliveries, OKs and EOSEs
// queue (a socket whose queue fills is dropped as a slow consumer, as
// ever) — then everything queued goes out. It returns the sockets open.
func (r *Relay) Stall(d time.Duration) int {
	r.stallUntil.Store(time.Now().Add(d).UnixNano())
	return int(r.conns.Load())
}

// stallLeft is how long the current Stall drill has to run (0: none).
func (r *Relay) stallLeft() time.Duration {
	u := r.stallUntil.Load()
	if u == 0 {
		return 0
	}
	return max(time.Duration(u-time.Now().UnixNano()), 0)
}

// LimiterOutage drills Buzz's shared limiter failing closed (its Redis
// unreachable; docs/buzz-names.md §h): for d every EVENT is refused, on a
// WebSocket as `OK false "rate-limited: shared admission unavailable"`, over
// HTTP with 503 and that error (block/buzz bridge.rs enforce_http_admission:
// AdmissionError::Unavailable => SERVICE_UNAVAILABLE). Reads go on (the
// newest admission module limits EVENTs only).
func (r *Relay) LimiterOutage(d time.Duration) {
	r.limiterUntil.Store(time.Now().Add(d).UnixNano())
}

// AdmissionUnavailable is Buzz's answer while its shared limiter is down.
const AdmissionUnavailable = "rate-limited: shared admission unavailable"

func (r *Relay) limiterDown() bool {
	u := r.limiterUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// SlowStore drills a slow database: for d every store read and write
// takes delay longer.
func (r *Relay) SlowStore(d, delay time.Duration) {
	r.slowDelay.Store(int64(delay))
	r.slowUntil.Store(time.Now().Add(d).UnixNano())
}

// slowStore waits out the SlowStore drill's delay, if one is on.
func (r *Relay) slowStore() {
	if u := r.slowUntil.Load(); u != 0 && time.Now().UnixNano() < u {
		time.Sleep(time.Duration(r.slowDelay.Load())) // the drill's point: a store this slow
	}
}
