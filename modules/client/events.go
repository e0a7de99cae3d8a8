package client

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Operation names this package records besides modules/relay's own
// (connect, auth, publish, subscribe_eose, http_query, http_events).
const (
	OpHistory     = "history"      // a channel's history_limit newest messages on connect (REQ closed at EOSE)
	OpDeliver     = "deliver"      // publish→delivery of a timed message, per subscriber
	OpHotReply    = "hot_reply"    // a hot-thread author's reply through /events
	OpThreadFetch = "thread_fetch" // a hot-thread author's read of the newest 100 replies (or its root search)
	OpTurnContext = "turn_context" // an agent turn's context reads
)

// SentTag names the tag that carries a message's send time: ["buzzload_sent",
// "<unix microseconds>"], taken just before the event is signed and sent.
// Every timed message has it: human messages, agent messages and turn
// replies, hot-thread replies. A subscriber that receives it live records
// deliver = frame arrival − send time (across machines this depends on clock
// sync; a negative difference is recorded as 0).
const SentTag = "buzzload_sent"

// sentTag renders t as the send-time tag.
func sentTag(t time.Time) []string {
	return []string{SentTag, strconv.FormatInt(t.UnixMicro(), 10)}
}

// SentAt returns the send time a timed message carries (ok false when it has
// none or the tag is malformed).
func SentAt(ev *nostr.Event) (time.Time, bool) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == SentTag {
			us, err := strconv.ParseInt(t[1], 10, 64)
			if err != nil || us <= 0 {
				return time.Time{}, false
			}
			return time.UnixMicro(us), true
		}
	}
	return time.Time{}, false
}

// RecordDeliver records the publish→delivery latency (deliver) of a timed
// event that arrived live at `at`, as every subscriber does. Events without
// a send time record nothing.
func RecordDeliver(sink relay.Sink, ev *nostr.Event, at time.Time) { recordDeliver(sink, ev, at) }

func recordDeliver(sink relay.Sink, ev *nostr.Event, at time.Time) {
	sent, ok := SentAt(ev)
	if !ok {
		return
	}
	d := at.Sub(sent)
	if d < 0 {
		d = 0
	}
	sink.Record(relay.Result{Op: OpDeliver, Start: sent, Duration: d, Outcome: relay.OutcomeOK})
}

// Seeded threads are found by a word in their root's content, searched with
// NIP-50 (the relay's /query and REQ "search"). The word is one token of
// letters and digits so any full-text tokenizer keeps it whole, and it
// derives from run_id so runs never find each other's roots.

func marker(prefix, kind, runID string) string {
	h := sha256.Sum256([]byte("buzzload/v1\x00" + kind + "\x00" + runID))
	return prefix + hex.EncodeToString(h[:6])
}

// RootMarker is the word in the content of every seeded deep-thread root of
// a run.
func RootMarker(runID string) string { return marker("bzlroot", "thread-root", runID) }

// HotRootMarker is the word in the content of the seeded hot-thread root.
func HotRootMarker(runID string) string { return marker("bzlhot", "hot-root", runID) }

// ThreadRootContent is the content seed gives deep-thread root t of ch.
func ThreadRootContent(runID string, ch scenario.Channel, t int) string {
	return "thread " + strconv.Itoa(t) + " of channel " + strconv.Itoa(ch.Community) + "/" + strconv.Itoa(ch.Index) + " " + RootMarker(runID)
}

// HotRootContent is the content seed gives the hot-thread root.
func HotRootContent(runID string) string { return "hot thread " + HotRootMarker(runID) }

// rootSearch is the filter that finds the roots marked with word in channel
// chID (limit 0: no limit given).
func rootSearch(chID, word string, limit int) relay.Filter {
	return relay.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {chID}},
		Limit: limit, Extra: map[string]any{"search": word}}
}

// markedRoots keeps the events that really carry word and are not replies
// (a relay's search may match loosely).
func markedRoots(evs []nostr.Event, word string) []string {
	var out []string
	for i := range evs {
		e := &evs[i]
		if strings.Contains(e.Content, word) && threadRoot(e) == "" {
			out = append(out, e.ID)
		}
	}
	return out
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
// to one message never repeats (a repeat is "duplicate: reaction already
// exists", an error).
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
