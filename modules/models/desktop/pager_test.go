package desktop

import (
	"fmt"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// windowFake serves a channel's top-level rows newest first (created_at
// DESC, id ASC), many sharing a timestamp, by the keyset cursor of the
// bounds it handed out, and refuses any cursor it did not hand out: the
// desktop PR's fixture for the window catch-up.
type windowFake struct {
	ch      string
	rows    []nostr.Event
	issued  map[Cursor]bool
	refused int
}

func newWindowFake(ch string, n, perSecond int) *windowFake {
	f := &windowFake{ch: ch, issued: map[Cursor]bool{}}
	for i := 0; i < n; i++ {
		// rows i*perSecond .. share created_at; ids ascend within a second
		f.rows = append(f.rows, nostr.Event{ID: hexID(1000 + i), Kind: 9, CreatedAt: int64(5000 - i/perSecond), Tags: [][]string{{"h", ch}}})
	}
	return f
}

func (f *windowFake) serve(flt relayclient.Filter) ([]nostr.Event, error) {
	start, d := 0, f.ch+":head"
	if flt.Until != 0 {
		c := Cursor{CreatedAt: flt.Until, ID: fmt.Sprint(flt.Extra["before_id"])}
		if !f.issued[c] {
			f.refused++
			return nil, fmt.Errorf("invalid: unknown cursor %+v", c)
		}
		for start < len(f.rows) && !(Cursor{f.rows[start].CreatedAt, f.rows[start].ID}).after(c) {
			start++
		}
		d = fmt.Sprintf("%s:%d:%s", f.ch, c.CreatedAt, c.ID)
	}
	end := min(start+flt.Limit, len(f.rows))
	page := append([]nostr.Event(nil), f.rows[start:end]...)
	content := `{"has_more":false,"next_cursor":null}`
	if end < len(f.rows) {
		last := f.rows[end-1]
		c := Cursor{last.CreatedAt, last.ID}
		f.issued[c] = true
		content = fmt.Sprintf(`{"has_more":true,"next_cursor":{"created_at":%d,"id":%q}}`, c.CreatedAt, c.ID)
	}
	return append(page, nostr.Event{ID: hexID(3), Kind: nostr.KindWindowBounds, Content: content, Tags: [][]string{{"d", d}, {"h", f.ch}}}), nil
}

// With rows sharing timestamps across page boundaries, the catch-up reads
// every row exactly once, in order, using only the cursors the relay gave
// (an invented one is refused by the fixture), and stops on has_more:false.
func TestWindowCatchUpOverEqualTimestampsUsesOnlyTheRelaysCursors(t *testing.T) {
	for _, perSecond := range []int{1, 7, 60, 200} {
		f := newWindowFake("c00", 200, perSecond)
		p := &WindowPager{Channel: "c00"}
		var seen []string
		for more := true; more; {
			evs, err := f.serve(p.Filter())
			if err != nil {
				t.Fatalf("%d per second: %v", perSecond, err)
			}
			for _, e := range evs {
				if e.Kind == 9 {
					seen = append(seen, e.ID)
				}
			}
			if more, err = p.Advance(evs); err != nil {
				t.Fatalf("%d per second: %v", perSecond, err)
			}
		}
		if len(seen) != len(f.rows) || f.refused != 0 {
			t.Fatalf("%d per second: %d rows seen of %d, %d cursors refused", perSecond, len(seen), len(f.rows), f.refused)
		}
		for i, id := range seen {
			if id != f.rows[i].ID {
				t.Fatalf("%d per second: row %d is %s, want %s (a gap or a repeat at a page boundary)", perSecond, i, id, f.rows[i].ID)
			}
		}
	}
	// The fixture does refuse what it did not hand out.
	f := newWindowFake("c00", 100, 7)
	if _, err := f.serve(relayclient.Filter{Limit: 60, Until: 4999, Extra: map[string]any{"before_id": hexID(1)}}); err == nil || f.refused != 1 {
		t.Error("an invented cursor was served")
	}
}
