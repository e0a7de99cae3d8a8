package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// The run's data shape that seed, the clients and the desktop model must
// agree on without talking: the words seeded roots carry, and the tag timed
// messages carry their send time in.

// SentTag names the tag that carries a message's send time: ["buzzload_sent",
// "<unix microseconds>"], taken just before the event is signed and sent.
// Every timed message has it: human messages, agent messages and turn
// replies, hot-thread replies. A subscriber that receives it live records
// deliver = frame arrival − send time (across machines this depends on clock
// sync; a negative difference is recorded as 0).
const SentTag = "buzzload_sent"

// SentAtTag renders t as the send-time tag.
func SentAtTag(t time.Time) []string {
	return []string{SentTag, strconv.FormatInt(t.UnixMicro(), 10)}
}

// SentAt returns the send time a timed message carries (ok false when it has
// none or the tag is malformed). Unreachable from the binary (deadcode), kept: the inverse of
// SentAtTag that tests read messages back with (the clients read the tag in
// place).
func SentAt(ev *nostr.Event) (time.Time, bool) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == SentTag {
			return ParseSentAt([]byte(t[1]))
		}
	}
	return time.Time{}, false
}

// ParseSentAt reads the send-time tag's value (the first SentTag tag with a
// value, as SentAt finds it). It allocates nothing: the delivery path
// calls it on every timed event (issue 16).
func ParseSentAt(v []byte) (time.Time, bool) {
	us, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || us <= 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
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
func ThreadRootContent(runID string, ch Channel, t int) string {
	return "thread " + strconv.Itoa(t) + " of channel " + strconv.Itoa(ch.Community) + "/" + strconv.Itoa(ch.Index) + " " + RootMarker(runID)
}

// HotRootContent is the content seed gives the hot-thread root.
func HotRootContent(runID string) string { return "hot thread " + HotRootMarker(runID) }

// MarkedRoots returns the ids of the seeded roots among events a search for
// word returned: stream messages that carry word and are not NIP-10 marked
// replies (a relay's search may match loosely), newest first, ties by lower
// id, so every client reads the same list in the same order.
func MarkedRoots(events []nostr.Event, word string) []string {
	var rows []*nostr.Event
	for i := range events {
		e := &events[i]
		if e.Kind == nostr.KindStreamMessage && strings.Contains(e.Content, word) && !isMarkedReply(e) {
			rows = append(rows, e)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].CreatedAt != rows[j].CreatedAt {
			return rows[i].CreatedAt > rows[j].CreatedAt
		}
		return rows[i].ID < rows[j].ID
	})
	out := make([]string, len(rows))
	for i, e := range rows {
		out[i] = e.ID
	}
	return out
}

// isMarkedReply reports an e tag with a NIP-10 "root" or "reply" marker.
func isMarkedReply(e *nostr.Event) bool {
	for _, t := range e.Tags {
		if len(t) >= 4 && t[0] == "e" && (t[3] == "root" || t[3] == "reply") {
			return true
		}
	}
	return false
}
