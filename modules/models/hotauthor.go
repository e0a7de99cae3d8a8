package models

import (
	"fmt"
	"github.com/buzzload/buzzload/modules/models/agent"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// hotFetchLimit is how many of the hot thread's newest replies a fetch reads.
const hotFetchLimit = 100

// hotState is what a hot-thread author keeps across sessions.
type hotState struct {
	root      string // the seeded hot root, once found
	nextReply time.Time
	nextFetch time.Time
	seq       uint64
}

// hotSession runs a hot-thread author over HTTP only: Poisson replies
// (hot_reply) and fetches of the newest 100 replies (thread_fetch). Until
// the seeded root is found, every attempt is a search for it that counts as
// a thread_fetch error when it finds nothing.
func (c *Client) hotSession(s *session) End {
	h := c.hot
	ht := c.sc.HotThread
	chID := c.sc.ChannelID(c.sc.HotThreadChannel())
	now := time.Now()
	if h.nextReply.IsZero() {
		h.nextReply, h.nextFetch = farFuture, farFuture
		if ht.RepliesPerHour > 0 {
			h.nextReply = now.Add(expDuration(c.rng, float64(time.Hour)/ht.RepliesPerHour))
		}
		if ht.FetchesPerHour > 0 {
			h.nextFetch = now.Add(expDuration(c.rng, float64(time.Hour)/ht.FetchesPerHour))
		}
	}
	for s.halt.Err() == nil {
		due := h.nextReply
		if h.nextFetch.Before(due) {
			due = h.nextFetch
		}
		if due.Equal(farFuture) {
			<-s.halt.Done()
			break
		}
		if !waitUntil(s.halt, nil, due, 0) {
			break
		}
		reply := !h.nextReply.After(h.nextFetch)
		if reply {
			h.nextReply = h.nextReply.Add(expDuration(c.rng, float64(time.Hour)/ht.RepliesPerHour))
		} else {
			h.nextFetch = h.nextFetch.Add(expDuration(c.rng, float64(time.Hour)/ht.FetchesPerHour))
		}
		if h.root == "" {
			c.findHotRoot(s, chID)
			continue
		}
		if reply {
			h.seq++
			tags := append(firstLevelReply(chID, h.root), scenario.SentAtTag(time.Now()))
			c.httpEvent(s, nostr.KindStreamMessage, tags, "hot reply "+messageContent(c.cfg.Global, h.seq), OpHotReply, due)
			continue
		}
		c.http.Query(s.opCtx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"e": {h.root}}, Limit: hotFetchLimit}}, relayclient.CallOptions{Op: OpThreadFetch, Due: due})
	}
	return s.end()
}

// findHotRoot searches the hot thread's channel for the seeded root. The
// search is recorded as thread_fetch: an error unless it finds the root.
func (c *Client) findHotRoot(s *session, chID string) {
	word := scenario.HotRootMarker(c.sc.RunID)
	body, err := relayclient.FiltersJSON([]relayclient.Filter{rootSearch(chID, word, 1)})
	if err != nil {
		c.sink.Record(relayclient.Result{Op: OpThreadFetch, Start: time.Now(), Outcome: relayclient.OutcomeError, Error: err.Error()})
		return
	}
	var root string
	c.http.Do(s.opCtx, relayclient.Request{Op: OpThreadFetch, Method: "POST", Path: "/query", Body: body,
		Check: func(b []byte) error {
			evs, err := relayclient.ParseEvents(b)
			if err != nil {
				return err
			}
			roots := scenario.MarkedRoots(evs, word)
			if len(roots) == 0 {
				return fmt.Errorf("no seeded hot-thread root in channel %s (community 0, channel 0)", chID)
			}
			root = roots[0]
			return nil
		}})
	if root != "" {
		c.hot.root = root
	}
}

// farFuture is the due time of what will not happen.
var farFuture = agent.Never
