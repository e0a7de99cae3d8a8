package desktop

import "fmt"

// ReadKind is one of the app's HTTP reads. Each is one limiter job; the
// driver may send several requests for it (pages, chunks), each reported
// under the read's operation.
type ReadKind uint8

// The reads.
const (
	ReadMetadata  ReadKind = iota // channel names (39000)
	ReadSidebar                   // sidebar preferences (30078 sections and stars)
	ReadRoster                    // rosters (39002 #p V), paged
	ReadProfiles                  // co-member profiles (kind 0), chunks of 500
	ReadStatuses                  // co-member statuses (30315), chunks of 100
	ReadEmoji                     // the custom emoji set (30030)
	ReadUnread                    // optional read-state snapshot, then unread repair in chunks of 128
	ReadReminders                 // own reminders (30300)
	ReadWindow                    // window catch-up: head then ≤ 5 older pages by the 39006 cursor
	ReadNotices                   // a window's notices (40099)
	ReadThread                    // a thread's root lookup, then its first page
	numReadKinds
)

var readNames = [...]string{"metadata", "sidebar", "roster", "profiles", "statuses", "emoji", "unread", "reminders", "window", "notices", "thread"}

func (k ReadKind) String() string {
	if k < numReadKinds {
		return readNames[k]
	}
	return "read?"
}

// ReadKey identifies a read for deduplication: the kind, and the window or
// thread number for the per-window and per-thread reads (0 otherwise).
type ReadKey struct {
	Kind  ReadKind
	Index int
}

func (k ReadKey) String() string {
	if k.Kind == ReadWindow || k.Kind == ReadNotices || k.Kind == ReadThread {
		return fmt.Sprintf("%s[%d]", k.Kind, k.Index)
	}
	return k.Kind.String()
}

// Read is one read to run.
type Read struct {
	Key ReadKey
	// Snapshot, for ReadUnread: read the read-state snapshot first (a full
	// repair). Without it the repair is "covered": unreads only.
	Snapshot bool
}

// ReadQueue is the client's read limiter: at most max reads run at once,
// the rest wait in order. A read that comes due while the same read (same
// key) is running or queued is not added again, except that a full unread
// repair upgrades a queued covered one. A read leaves the running set as
// soon as it settles, so a failed read can run again while an unrelated
// slow one is still under way.
type ReadQueue struct {
	max     int
	running map[ReadKey]Read
	queued  []Read
}

// NewReadQueue returns a limiter of max concurrent reads.
func NewReadQueue(max int) *ReadQueue {
	return &ReadQueue{max: max, running: map[ReadKey]Read{}}
}

// Add asks for r. It returns the reads to start now (r, or nothing) and
// whether r was taken (started, queued, or upgraded a queued read).
func (q *ReadQueue) Add(r Read) (start []Read, taken bool) {
	if _, ok := q.running[r.Key]; ok {
		return nil, false
	}
	for i := range q.queued {
		if q.queued[i].Key == r.Key {
			if r.Snapshot && !q.queued[i].Snapshot {
				q.queued[i].Snapshot = true
				return nil, true
			}
			return nil, false
		}
	}
	if len(q.running) < q.max {
		q.running[r.Key] = r
		return []Read{r}, true
	}
	q.queued = append(q.queued, r)
	return nil, true
}

// Settle records that the read k finished (either way) and returns the
// queued reads that start in its place.
func (q *ReadQueue) Settle(k ReadKey) (start []Read) {
	if _, ok := q.running[k]; !ok {
		return nil
	}
	delete(q.running, k)
	for len(q.running) < q.max && len(q.queued) > 0 {
		r := q.queued[0]
		q.queued = q.queued[1:]
		q.running[r.Key] = r
		start = append(start, r)
	}
	return start
}

// Len returns the running and queued counts.
func (q *ReadQueue) Len() (running, queued int) { return len(q.running), len(q.queued) }
