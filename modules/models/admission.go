package models

import (
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

// Buzz's WebSocket admission: 10 frames a second applied as 50 REQ, COUNT
// and EVENT frames per 5 s per (community, pubkey), summed over the key's
// connections (connection.rs enforce_ws_admission, admission.rs
// WS_BURST_WINDOW_SECS; docs/buzz-protocol.md §0). A frame over it is
// refused ("rate-limited: quota exceeded; retry in Ns").
const (
	WSAdmissionFrames = scenario.WSAdmissionFrames
	WSAdmissionWindow = scenario.WSAdmissionWindowSecs * time.Second
	// connectFrameBudget is what a basic human's connect-time REQs may use
	// of the window; the rest is left to its activity's EVENTs.
	connectFrameBudget = WSAdmissionFrames - 10
	// MaxChannelValuesPerREQ is Buzz's cap on #h values in one REQ,
	// aggregated over its filters (req.rs MAX_EXPLICIT_CHANNEL_VALUES; more
	// is CLOSED "restricted: too many explicit channels").
	MaxChannelValuesPerREQ = scenario.MaxChannelValuesPerREQ
)

// admission paces frames to at most limit in any trailing window (the
// relay's sliding-window log). It is pure: wait says how long until one
// more frame fits at now; sent records one.
type admission struct {
	limit  int
	window time.Duration
	sent   []time.Time
}

func (a *admission) wait(now time.Time) time.Duration {
	for len(a.sent) > 0 && !a.sent[0].Add(a.window).After(now) {
		a.sent = a.sent[1:]
	}
	if len(a.sent) < a.limit {
		return 0
	}
	return a.sent[0].Add(a.window).Sub(now)
}

func (a *admission) record(now time.Time) { a.sent = append(a.sent, now) }

// chunkChannels splits ids into groups of at most n.
func chunkChannels(ids []string, n int) [][]string {
	var out [][]string
	for len(ids) > n {
		out = append(out, ids[:n:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}
