package desktop

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// Cursor is a (created_at, id) position in a newest-first listing.
type Cursor struct {
	CreatedAt int64  `json:"created_at"`
	ID        string `json:"id"`
}

// after reports whether c lies strictly further along a newest-first
// (created_at DESC, id ASC) listing than prev.
func (c Cursor) after(prev Cursor) bool {
	return c.CreatedAt < prev.CreatedAt || (c.CreatedAt == prev.CreatedAt && c.ID > prev.ID)
}

// Bounds is a window page's kind-39006 content.
type Bounds struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *Cursor `json:"next_cursor"`
}

// ErrNoBounds marks a window page without its 39006: the channel is
// inaccessible, which is an error, never "no more history".
var ErrNoBounds = errors.New("no window bounds (kind 39006)")

// WindowPager walks one window catch-up: the head page, then older pages
// by the cursor in each page's 39006 bounds, at most MaxOlderPages of them,
// until the bounds say history is exhausted. A page that comes back full
// proves nothing; only has_more:false ends the walk.
type WindowPager struct {
	Channel string
	Relay   string // R; "" skips the signer check
	older   int
	cursor  *Cursor
	done    bool
}

// Done reports whether the catch-up is over.
func (p *WindowPager) Done() bool { return p.done }

// Filter is the next page's request filter.
func (p *WindowPager) Filter() relayclient.Filter {
	f := relayclient.Filter{Kinds: WindowKinds, Tags: tags("h", p.Channel), Limit: WindowHeadLimit,
		Extra: map[string]any{"top_level": true, "include_aux": true, "include_summaries": true}}
	if p.cursor != nil {
		f.Limit = WindowOlderLimit
		f.Until = p.cursor.CreatedAt
		f.Extra["before_id"] = p.cursor.ID
	}
	return f
}

// expectedD is the d tag the page's bounds must carry.
func (p *WindowPager) expectedD() string {
	if p.cursor == nil {
		return p.Channel + ":head"
	}
	return p.Channel + ":" + strconv.FormatInt(p.cursor.CreatedAt, 10) + ":" + p.cursor.ID
}

// Advance takes the reply to Filter's request. It returns whether another
// page follows; an invalid page is an error and ends the walk.
func (p *WindowPager) Advance(events []nostr.Event) (more bool, err error) {
	if p.done {
		return false, errors.New("window catch-up already done")
	}
	p.done = true
	var bounds *nostr.Event
	for i := range events {
		if events[i].Kind != nostr.KindWindowBounds {
			continue
		}
		if bounds != nil {
			return false, fmt.Errorf("window %s: two bounds events", p.Channel)
		}
		bounds = &events[i]
	}
	if bounds == nil {
		return false, fmt.Errorf("window %s: %w", p.Channel, ErrNoBounds)
	}
	if p.Relay != "" && bounds.PubKey != p.Relay {
		return false, fmt.Errorf("window %s: bounds signed by %s, not the relay", p.Channel, bounds.PubKey)
	}
	if h := bounds.TagValue("h"); h != p.Channel {
		return false, fmt.Errorf("window %s: bounds h %q", p.Channel, h)
	}
	if d, want := bounds.TagValue("d"), p.expectedD(); d != want {
		return false, fmt.Errorf("window %s: bounds d %q, want %q", p.Channel, d, want)
	}
	var b Bounds
	if err := json.Unmarshal([]byte(bounds.Content), &b); err != nil {
		return false, fmt.Errorf("window %s: bounds content: %w", p.Channel, err)
	}
	if b.HasMore != (b.NextCursor != nil) {
		return false, fmt.Errorf("window %s: has_more %v with next_cursor %v", p.Channel, b.HasMore, b.NextCursor)
	}
	if !b.HasMore {
		return false, nil
	}
	if b.NextCursor.ID == "" || (p.cursor != nil && !b.NextCursor.after(*p.cursor)) {
		return false, fmt.Errorf("window %s: next_cursor %+v does not advance", p.Channel, *b.NextCursor)
	}
	if p.older == MaxOlderPages {
		return false, nil
	}
	p.older++
	p.cursor = b.NextCursor
	p.done = false
	return true, nil
}

// RosterPager walks the roster read: pages of 500 rosters (39002 #p V),
// newest first, each after the oldest roster of the previous page, until a
// page holds fewer than 500 or MaxRosterPages were read.
type RosterPager struct {
	Viewer string
	pages  int
	cursor *Cursor
	done   bool
}

// Done reports whether the read is over.
func (p *RosterPager) Done() bool { return p.done }

// Filter is the next page's request filter.
func (p *RosterPager) Filter() relayclient.Filter {
	f := relayclient.Filter{Kinds: []int{nostr.KindGroupMembers}, Tags: tags("p", p.Viewer), Limit: RosterPage}
	if p.cursor != nil {
		f.Until = p.cursor.CreatedAt
		f.Extra = map[string]any{"before_id": p.cursor.ID}
	}
	return f
}

// Advance takes a page and returns whether another page follows.
func (p *RosterPager) Advance(events []nostr.Event) bool {
	p.pages++
	var rosters []Cursor
	for i := range events {
		if events[i].Kind == nostr.KindGroupMembers {
			rosters = append(rosters, Cursor{CreatedAt: events[i].CreatedAt, ID: events[i].ID})
		}
	}
	if len(rosters) < RosterPage || p.pages >= MaxRosterPages {
		p.done = true
		return false
	}
	sort.Slice(rosters, func(i, j int) bool { return rosters[j].after(rosters[i]) })
	last := rosters[len(rosters)-1]
	p.cursor = &last
	return true
}

// PickRoot picks the seeded thread root out of a root search's reply: the
// row whose 39005 summary counts the most replies (ties: the newest row,
// then the lower id). "" when no row has replies.
func PickRoot(events []nostr.Event) string {
	rows := map[string]*nostr.Event{}
	for i := range events {
		if events[i].Kind != nostr.KindThreadSummary && events[i].Kind != nostr.KindWindowBounds {
			rows[events[i].ID] = &events[i]
		}
	}
	best, bestN := "", 0
	var bestAt int64
	for i := range events {
		e := &events[i]
		if e.Kind != nostr.KindThreadSummary {
			continue
		}
		root := e.TagValue("e")
		row := rows[root]
		if row == nil {
			continue
		}
		var s struct {
			ReplyCount int `json:"reply_count"`
		}
		if json.Unmarshal([]byte(e.Content), &s) != nil || s.ReplyCount <= 0 {
			continue
		}
		if s.ReplyCount > bestN || (s.ReplyCount == bestN && (row.CreatedAt > bestAt || (row.CreatedAt == bestAt && root < best))) {
			best, bestN, bestAt = root, s.ReplyCount, row.CreatedAt
		}
	}
	return best
}
