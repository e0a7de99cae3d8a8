package models

import (
	"strconv"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Operation names this package records besides modules/relayclient's own
// (connect, auth, publish, subscribe_eose, http_query, http_events).
const (
	OpHistory     = "history"      // a channel's history_limit newest messages on connect (REQ closed at EOSE)
	OpDeliver     = "deliver"      // publish→delivery of a timed message, per subscriber
	OpHotReply    = "hot_reply"    // a hot-thread author's reply through /events
	OpThreadFetch = "thread_fetch" // a hot-thread author's read of the newest 100 replies (or its root search)
	OpTurnContext = "turn_context" // an agent turn's context reads
)

// HTTPTimeout is the deadline of an agent's or hot-thread author's HTTP
// request (buzz-LOADGEN "Abort": HTTP requests 60 s; publishes and history
// fetches keep relayclient's 30 s, desktop reads their model's 30 s).
const HTTPTimeout = 60 * time.Second

// RecordDeliver records the publish→delivery latency (deliver) of a timed
// event that arrived live at `at`, as every subscriber does (modules/models/desktop
// too). Events without a send time, or a nil sink, record nothing.
func RecordDeliver(sink relayclient.Sink, ev *nostr.EventView, at time.Time) {
	if sink == nil {
		return
	}
	v, ok := ev.TagValue(scenario.SentTag, 2)
	if !ok {
		return
	}
	sent, ok := scenario.ParseSentAt(v)
	if !ok {
		return
	}
	d := max(at.Sub(sent), 0)
	sink.Record(relayclient.Result{Op: OpDeliver, Start: sent, Duration: d, Outcome: relayclient.OutcomeOK})
	if w, ok := sink.(DeliveryWatcher); ok && w.Watching() {
		w.Delivered(ev.ID[:])
	}
}

// DeliveryWatcher is a Sink that watches some delivered events by id (the
// extension's events the relay never acknowledged, which must not reach
// readers): Watching is cheap and says whether it wants any now,
// Delivered takes a delivered event's hex id (not kept).
type DeliveryWatcher interface {
	Watching() bool
	Delivered(id []byte)
}

// rootSearch is the filter that finds the roots marked with word in channel
// chID (limit 0: no limit given).
func rootSearch(chID, word string, limit int) relayclient.Filter {
	return relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {chID}},
		Limit: limit, Extra: map[string]any{"search": word}}
}

// threadRoot returns the root of the thread e replies into, or "" for a
// top-level message (NIP-10 marked e tags: "root", else a lone "reply").
func threadRoot(e *nostr.Event) string {
	reply := ""
	for _, t := range e.Tags {
		if len(t) >= 4 && t[0] == "e" {
			switch t[3] {
			case "root":
				return t[1]
			case "reply":
				reply = t[1]
			}
		}
	}
	return reply
}

// firstLevelReply tags a reply directly under root (the single NIP-10
// "reply" marker Buzz reads as depth 1).
func firstLevelReply(chID, root string) [][]string {
	return [][]string{{"h", chID}, {"e", root, "", "reply"}}
}

// messageContent is a short message body; size is not modelled.
func messageContent(g int, seq uint64) string {
	return "load message " + strconv.Itoa(g) + "-" + strconv.FormatUint(seq, 10)
}

// reactionContents are the emoji a member cycles through, so reacting twice
// to one message in a run never repeats. A rerun (or a retried shard) does
// repeat them; Buzz answers "duplicate: reaction already exists", which the
// clients count as ok (relayclient DuplicateOK): a reaction is idempotent.
var reactionContents = []string{"+", "👍", "❤️", "🎉", "👀", "🔥", "😄", "🙏"}

// recentIDs remembers the last few event ids a client sent on its socket.
// Typing indicators and presence have no varying content, so two sent in
// the same second are the same event (same id): the second is not sent, as
// an app would not repeat an indicator within a second (and the relay
// would refuse it as a duplicate in flight).
type recentIDs struct {
	ids  [8]string
	next int
}

// add records id and reports whether it is new.
func (r *recentIDs) add(id string) bool {
	for _, x := range r.ids {
		if x == id {
			return false
		}
	}
	r.ids[r.next] = id
	r.next = (r.next + 1) % len(r.ids)
	return true
}
