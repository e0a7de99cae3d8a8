package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

type bounds struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *Cursor `json:"next_cursor"`
	TRIC       *bool   `json:"thread_replies_in_channel"`
	Version    int     `json:"version"`
	Direction  string  `json:"direction"`
}

func checkOverlay(t *testing.T, e *nostr.Event, kind int, keys *nostr.Keys, tagNames ...string) {
	t.Helper()
	if e == nil || e.Kind != kind {
		t.Fatalf("overlay %v is not kind %d", e, kind)
	}
	if e.PubKey != keys.PubKey() || e.Verify() != nil {
		t.Fatalf("kind %d overlay not signed by the relay key: %v", kind, e.Verify())
	}
	var names []string
	for _, tg := range e.Tags {
		if len(tg) != 2 {
			t.Fatalf("kind %d tag %v is not a pair", kind, tg)
		}
		names = append(names, tg[0])
	}
	if !slices.Equal(names, tagNames) {
		t.Fatalf("kind %d tags %v, want exactly %v", kind, names, tagNames)
	}
}

// windowChannel stores n rows in chA at 7 per second with ids that do not
// follow time, plus events that must never be rows: replies, a deleted
// row, an unrequested kind, another channel. Returns rows in window order.
func windowChannel(t *testing.T, s *Store, n int) []string {
	var rows []*nostr.Event
	for i := 0; i < n; i++ {
		e := ev(i*7919%100003+1, i%5, 1000+i/7, []int{9, 40002}[i%2], h(chA))
		mustAdd(t, s, e)
		rows = append(rows, e)
	}
	if n > 0 {
		mustAdd(t, s, ev(200001, 1, 1000, 9, h(chA), replyToID(rows[0].ID)))
	}
	mustAdd(t, s, ev(200002, 1, 1001, 9, h(chA)))
	s.Delete(hexID(200002))
	mustAdd(t, s, ev(200003, 1, 1001, 40100, h(chA)))
	mustAdd(t, s, ev(200004, 1, 1001, 9, h(chB)))
	mustAdd(t, s, ev(200005, 1, 1001, 7, h(chA), []string{"e", hexID(200004)}))
	slices.SortFunc(rows, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return idsOf(rows)
}

func TestChannelWindowPagesWithoutRepeatsOrGaps(t *testing.T) {
	keys := testKeys(t)
	cases := []struct{ rows, limit int }{
		{0, 20}, {1, 20}, {20, 20}, {21, 20}, {60, 20}, {137, 20}, {137, 60}, {45, 1}, {250, 200}, {400, 200},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d rows by %d", c.rows, c.limit), func(t *testing.T) {
			s := New(Config{})
			want := windowChannel(t, s, c.rows)
			rd := Reader{Signer: keys, Now: time.Unix(5000, 0)}
			var got []string
			var until *int64
			before := ""
			for page := 0; ; page++ {
				if page > c.rows/c.limit+2 {
					t.Fatalf("paging did not stop after %d pages", page)
				}
				js := fmt.Sprintf(`{"top_level":true,"#h":[%q],"kinds":[9,40002],"limit":%d}`, chA, c.limit)
				if until != nil {
					js = fmt.Sprintf(`{"top_level":true,"#h":[%q],"kinds":[9,40002],"limit":%d,"until":%d,"before_id":%q}`, chA, c.limit, *until, before)
				}
				w, err := s.ChannelWindow(filter(t, js), rd)
				if err != nil {
					t.Fatal(err)
				}
				checkOverlay(t, w.Bounds, nostr.KindWindowBounds, keys, "d", "h")
				wantD := chA + ":head"
				if until != nil {
					wantD = fmt.Sprintf("%s:%d:%s", chA, *until, before)
				}
				if w.Bounds.Tags[0][1] != wantD || w.Bounds.Tags[1][1] != chA {
					t.Fatalf("page %d bounds tags %v, want d %s", page, w.Bounds.Tags, wantD)
				}
				var b bounds
				if err := json.Unmarshal([]byte(w.Bounds.Content), &b); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(w.Bounds.Content, `{"has_more":`) || b.TRIC == nil || *b.TRIC {
					t.Fatalf("bounds content %s", w.Bounds.Content)
				}
				if b.HasMore != (b.NextCursor != nil) || b.HasMore != w.HasMore {
					t.Fatalf("has_more %v with next_cursor %v", b.HasMore, b.NextCursor)
				}
				if len(w.Rows) > c.limit {
					t.Fatalf("page of %d rows over limit %d", len(w.Rows), c.limit)
				}
				got = append(got, idsOf(w.Rows)...)
				ev := w.Events()
				if ev[len(ev)-1] != w.Bounds || len(ev) != len(w.Rows)+1 {
					t.Fatalf("wire order wrong")
				}
				if !b.HasMore {
					break
				}
				last := w.Rows[len(w.Rows)-1]
				if b.NextCursor.CreatedAt != last.CreatedAt || b.NextCursor.ID != last.ID {
					t.Fatalf("next_cursor %v is not the last row", b.NextCursor)
				}
				until, before = &b.NextCursor.CreatedAt, b.NextCursor.ID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("paged %d rows, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestChannelWindowRowSelection(t *testing.T) {
	keys := testKeys(t)
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))                                                     // root
	mustAdd(t, s, ev(2, 2, 101, 9, h(chA), replyTo(1)))                                         // reply: not a row
	mustAdd(t, s, ev(3, 3, 102, 9, h(chA), replyTo(1), []string{"broadcast", "1"}))             // broadcast depth 1: row
	mustAdd(t, s, ev(4, 3, 103, 9, h(chA), rootTag(1), replyTo(3), []string{"broadcast", "1"})) // depth 2: not a row
	mustAdd(t, s, ev(5, 1, 104, 40099, h(chA)))                                                 // system message
	mustAdd(t, s, ev(6, 2, 105, 7, []string{"e", hexID(1)}))                                    // reaction: never a row
	mustAdd(t, s, ev(7, 2, 106, 9, h(chA), replyTo(99)))                                        // parent unknown: fail-open row
	cases := []struct {
		name       string
		kinds      string
		projection bool
		want       []int
	}{
		{"default mode: depth 0, broadcast depth 1, unknown depth", `"kinds":[9],`, false, []int{7, 3, 1}},
		{"kinds restrict rows", `"kinds":[40099],`, false, []int{5}},
		{"without kinds, aux kinds are not rows", ``, false, []int{7, 5, 3, 1}},
		{"projection mode: every reply is a row, once", `"kinds":[9],`, true, []int{7, 4, 3, 2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filter(t, `{"top_level":true,`+c.kinds+`"#h":["`+chA+`"]}`)
			w, err := s.ChannelWindow(f, Reader{Signer: keys, ThreadRepliesInChannel: c.projection})
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(w.Rows); !slices.Equal(got, hexIDs(c.want...)) {
				t.Fatalf("rows %v, want %v", short(got), short(hexIDs(c.want...)))
			}
			if c.projection && !strings.Contains(w.Bounds.Content, `"thread_replies_in_channel":true`) {
				t.Fatalf("bounds do not echo the row mode: %s", w.Bounds.Content)
			}
		})
	}
	t.Run("an inaccessible channel serves nothing, not even bounds", func(t *testing.T) {
		f := filter(t, `{"top_level":true,"#h":["`+chA+`"]}`)
		w, err := s.ChannelWindow(f, Reader{Signer: keys, CanRead: func(string) bool { return false }})
		if err != nil || w.Served || len(w.Events()) != 0 {
			t.Fatalf("served %v events %d err %v", w.Served, len(w.Events()), err)
		}
	})
	t.Run("an empty accessible channel serves bounds with has_more false", func(t *testing.T) {
		f := filter(t, `{"top_level":true,"#h":["`+chB+`"]}`)
		w, err := s.ChannelWindow(f, Reader{Signer: keys})
		if err != nil || !w.Served || w.Bounds == nil || w.HasMore || !strings.Contains(w.Bounds.Content, `"next_cursor":null`) {
			t.Fatalf("empty channel window %+v %v", w, err)
		}
	})
}

func TestChannelWindowAuxAndSummaries(t *testing.T) {
	keys := testKeys(t)
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))                               // row with a thread
	mustAdd(t, s, ev(2, 2, 110, 9, h(chA), replyTo(1)))                   // depth 1
	mustAdd(t, s, ev(3, 3, 111, 9, h(chA), rootTag(1), replyTo(2)))       // depth 2
	mustAdd(t, s, ev(4, 2, 112, 9, h(chA), replyTo(1)))                   // depth 1, newest
	mustAdd(t, s, ev(5, 4, 113, 9, h(chA), replyTo(1)))                   // deleted below
	mustAdd(t, s, ev(6, 1, 120, 9, h(chA)))                               // row without replies
	mustAdd(t, s, ev(10, 5, 130, 7, []string{"e", hexID(1)}))             // reaction to row 1
	mustAdd(t, s, ev(11, 5, 131, 40003, h(chA), []string{"e", hexID(6)})) // edit of row 6
	mustAdd(t, s, ev(12, 6, 132, 7, h(chA), []string{"e", hexID(6)}))     // reaction, deleted below
	mustAdd(t, s, ev(13, 6, 133, 5, []string{"e", hexID(12)}))            // deletion of reaction 12 (hop 2)
	mustAdd(t, s, ev(14, 6, 134, 7, h(chA), []string{"e", hexID(2)}))     // reaction to a reply: not aux of rows
	s.Delete(hexID(5))
	s.Delete(hexID(12))

	f := filter(t, `{"top_level":true,"#h":["`+chA+`"],"kinds":[9],"include_aux":true,"include_summaries":true}`)
	w, err := s.ChannelWindow(f, Reader{Signer: keys, Now: time.Unix(9000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(w.Rows); !slices.Equal(got, hexIDs(6, 1)) {
		t.Fatalf("rows %v", short(got))
	}
	aux := idsOf(w.Aux)
	slices.Sort(aux)
	if !slices.Equal(aux, hexIDs(10, 11, 13)) {
		t.Fatalf("aux %v, want reaction 10, edit 11, deletion 13 (not deleted 12, not 14)", short(aux))
	}
	if len(w.Summaries) != 1 {
		t.Fatalf("%d summaries, want one (row 6 has no replies)", len(w.Summaries))
	}
	sm := w.Summaries[0]
	checkOverlay(t, sm, nostr.KindThreadSummary, keys, "e", "d", "h")
	if sm.Tags[0][1] != hexID(1) || sm.Tags[1][1] != hexID(1) || sm.Tags[2][1] != chA {
		t.Fatalf("summary tags %v", sm.Tags)
	}
	want := fmt.Sprintf(`{"reply_count":2,"descendant_count":3,"last_reply_at":112,"participants":[%q,%q]}`, pk(2), pk(3))
	if sm.Content != want {
		t.Fatalf("summary content\n%s\nwant\n%s", sm.Content, want)
	}
	if sm.CreatedAt != 9000 {
		t.Fatalf("summary created_at %d", sm.CreatedAt)
	}
	// An unchanged summary is reused; a changed one is re-signed, never older.
	w2, _ := s.ChannelWindow(f, Reader{Signer: keys, Now: time.Unix(9500, 0)})
	if w2.Summaries[0] != sm {
		t.Fatal("unchanged summary was re-signed")
	}
	mustAdd(t, s, ev(7, 7, 140, 9, h(chA), rootTag(1), replyTo(3)))
	w3, _ := s.ChannelWindow(f, Reader{Signer: keys, Now: time.Unix(8000, 0)})
	if w3.Summaries[0] == sm || w3.Summaries[0].CreatedAt < sm.CreatedAt || !strings.Contains(w3.Summaries[0].Content, `"descendant_count":4,"last_reply_at":140`) {
		t.Fatalf("changed summary: %+v", w3.Summaries[0])
	}
}

func TestBroadcastRowSummaryCountsOnlyItsSubtree(t *testing.T) {
	keys := testKeys(t)
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	mustAdd(t, s, ev(2, 2, 101, 9, h(chA), replyTo(1), []string{"broadcast", "1"}))
	mustAdd(t, s, ev(3, 3, 102, 9, h(chA), rootTag(1), replyTo(2)))
	mustAdd(t, s, ev(4, 4, 103, 9, h(chA), replyTo(1)))
	f := filter(t, `{"top_level":true,"#h":["`+chA+`"],"kinds":[9],"include_summaries":true}`)
	w, err := s.ChannelWindow(f, Reader{Signer: keys})
	if err != nil {
		t.Fatal(err)
	}
	byRow := map[string]string{}
	for _, sm := range w.Summaries {
		byRow[sm.Tags[0][1]] = sm.Content
	}
	if want := fmt.Sprintf(`{"reply_count":1,"descendant_count":1,"last_reply_at":102,"participants":[%q]}`, pk(3)); byRow[hexID(2)] != want {
		t.Fatalf("broadcast row summary %s", byRow[hexID(2)])
	}
	if want := fmt.Sprintf(`{"reply_count":2,"descendant_count":3,"last_reply_at":103,"participants":[%q,%q,%q]}`, pk(4), pk(3), pk(2)); byRow[hexID(1)] != want {
		t.Fatalf("root summary %s", byRow[hexID(1)])
	}
}
