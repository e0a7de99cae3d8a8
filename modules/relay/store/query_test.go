package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

// seedQuery: ids 1..12 in chA and chB, several in the same second.
func seedQuery(t *testing.T, cfg Config) *Store {
	s := New(cfg)
	for _, e := range [](struct{ id, author, at, kind int }){
		{1, 1, 100, 9}, {2, 2, 100, 9}, {3, 1, 101, 9}, {4, 2, 102, 40002}, {5, 1, 102, 9}, {6, 3, 103, 9},
	} {
		mustAdd(t, s, ev(e.id, e.author, e.at, e.kind, h(chA), []string{"p", pk(9)}))
	}
	for _, e := range [](struct{ id, author, at, kind int }){{7, 1, 100, 9}, {8, 2, 104, 9}} {
		mustAdd(t, s, ev(e.id, e.author, e.at, e.kind, h(chB)))
	}
	mustAdd(t, s, ev(9, 1, 99, 0))   // profile, no channel
	mustAdd(t, s, ev(10, 2, 105, 1)) // global note
	return s
}

func TestQueryOrderLimitsAndUnion(t *testing.T) {
	s := seedQuery(t, Config{MaxLimit: 6})
	only := func(ch string) Reader { return Reader{CanRead: func(c string) bool { return c == ch }} }
	cases := []struct {
		name    string
		filters string
		rd      Reader
		want    []int
	}{
		{"newest first, same second by id ascending", `[{"#h":["` + chA + `"],"limit":10}]`, Reader{}, []int{6, 4, 5, 3, 1, 2}},
		{"limit keeps the newest", `[{"#h":["` + chA + `"],"limit":2}]`, Reader{}, []int{6, 4}},
		{"limit 0 replays nothing", `[{"#h":["` + chA + `"],"limit":0}]`, Reader{}, nil},
		{"no limit is capped at MaxLimit", `[{"kinds":[9]}]`, Reader{}, []int{8, 6, 5, 3, 1, 2}},
		{"limit above MaxLimit is clamped", `[{"kinds":[9],"limit":100}]`, Reader{}, []int{8, 6, 5, 3, 1, 2}},
		{"kinds across channels and global", `[{"kinds":[9,0,1],"since":103}]`, Reader{}, []int{10, 8, 6}},
		{"authors index", `[{"authors":["` + pk(1) + `"]}]`, Reader{}, []int{5, 3, 1, 7, 9}},
		{"until is inclusive", `[{"#h":["` + chA + `"],"until":101}]`, Reader{}, []int{3, 1, 2}},
		{"before_id cursor continues within a second", `[{"#h":["` + chA + `"],"until":102,"before_id":"` + hexID(4) + `"}]`, Reader{}, []int{5, 3, 1, 2}},
		{"since bounds the scan", `[{"#h":["` + chA + `"],"since":102}]`, Reader{}, []int{6, 4, 5}},
		{"p tag index", `[{"#p":["` + pk(9) + `"],"kinds":[40002]}]`, Reader{}, []int{4}},
		{"ids lookup", `[{"ids":["` + hexID(7) + `","` + hexID(9) + `"]}]`, Reader{}, []int{7, 9}},
		{"ids respect #h", `[{"ids":["` + hexID(7) + `"],"#h":["` + chA + `"]}]`, Reader{}, nil},
		{"union is de-duplicated and newest first", `[{"authors":["` + pk(2) + `"],"limit":2},{"#h":["` + chB + `"]}]`, Reader{}, []int{10, 8, 7}},
		{"per-filter limits apply before the union", `[{"#h":["` + chA + `"],"limit":1},{"#h":["` + chB + `"],"limit":1}]`, Reader{}, []int{8, 6}},
		{"unreadable channels are left out before the limit", `[{"kinds":[9],"limit":2}]`, only(chB), []int{8, 7}},
		{"global events stay readable", `[{"kinds":[0]}]`, only(chB), []int{9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := ParseFilters([]byte(c.filters))
			if err != nil {
				t.Fatal(err)
			}
			got := idsOf(s.Query(fs, c.rd))
			if !slices.Equal(got, hexIDs(c.want...)) {
				t.Fatalf("got %v\nwant %v", short(got), short(hexIDs(c.want...)))
			}
		})
	}
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[58:]
	}
	return out
}

func TestCount(t *testing.T) {
	s := seedQuery(t, Config{})
	cases := []struct {
		name    string
		filters string
		want    int
		err     error
	}{
		{"kinds and #h from list lengths", `[{"kinds":[9],"#h":["` + chA + `"]}]`, 5, nil},
		{"limit is ignored", `[{"kinds":[9],"#h":["` + chA + `"],"limit":1}]`, 5, nil},
		{"author count", `[{"authors":["` + pk(1) + `"]}]`, 5, nil},
		{"union counts each event once", `[{"authors":["` + pk(1) + `"]},{"kinds":[9],"#h":["` + chA + `"]}]`, 7, nil},
		{"since applies", `[{"kinds":[9],"since":102}]`, 3, nil},
		{"a filter with no indexed constraint is too broad", `[{"since":1}]`, 0, ErrCountTooBroad},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := ParseFilters([]byte(c.filters))
			n, err := s.Count(fs, Reader{})
			if !errors.Is(err, c.err) || n != c.want {
				t.Fatalf("Count = %d, %v; want %d, %v", n, err, c.want, c.err)
			}
		})
	}
}

func TestEvictionCapDropsTheEarliestStored(t *testing.T) {
	s := New(Config{MaxEvents: 100})
	for i := 1; i <= 250; i++ {
		mustAdd(t, s, ev(i, i%7, 1000+i, 9, h(chA)))
		if i%10 == 0 { // replaceable churn must not defeat the cap
			mustAdd(t, s, ev(10000+i, 1, 1000+i, 30078, []string{"d", "x"}))
		}
	}
	if s.Len() > 100 {
		t.Fatalf("Len %d above the cap", s.Len())
	}
	if _, ok := s.Get(hexID(1)); ok {
		t.Fatal("earliest event survived eviction")
	}
	if _, ok := s.Get(hexID(250)); !ok {
		t.Fatal("newest event was evicted")
	}
	all := s.Query([]Filter{{Tags: map[string][]string{"h": {chA}}}}, Reader{})
	n, _ := s.Count([]Filter{{Kinds: []int{9}}}, Reader{})
	if len(all) != n || n < 90 || all[0].ID != hexID(250) {
		t.Fatalf("indexes disagree after eviction: query %d, count %d", len(all), n)
	}
	for _, e := range all {
		if _, ok := s.Get(e.ID); !ok {
			t.Fatalf("query returned evicted %s", e.ID)
		}
	}
	if got := s.Query([]Filter{{Kinds: []int{30078}}}, Reader{}); len(got) != 1 || got[0].ID != hexID(10250) {
		t.Fatalf("replaceable after churn: %v", idsOf(got))
	}
}

func TestVisibleAppliesPerEventBeforeLimits(t *testing.T) {
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	mustAdd(t, s, ev(2, 1, 101, 9, h(chA)))
	mustAdd(t, s, ev(3, 2, 102, 9, h(chA))) // hidden from the reader below
	mustAdd(t, s, ev(4, 2, 103, 7, []string{"e", hexID(2)}))
	hideAuthor2 := Reader{Signer: testKeys(t), Visible: func(e *nostr.Event, _ string) bool { return e.PubKey != pk(2) }}
	if got := idsOf(s.Query([]Filter{{Kinds: []int{9}, Limit: ptr(1)}}, hideAuthor2)); !slices.Equal(got, hexIDs(2)) {
		t.Fatalf("query got %v, want the newest visible event", short(got))
	}
	if n, _ := s.Count([]Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {chA}}}}, hideAuthor2); n != 2 {
		t.Fatalf("count %d, want 2 visible", n)
	}
	w, err := s.ChannelWindow(filter(t, `{"top_level":true,"#h":["`+chA+`"],"kinds":[9],"limit":1,"include_aux":true}`), hideAuthor2)
	if err != nil || !slices.Equal(idsOf(w.Rows), hexIDs(2)) || len(w.Aux) != 0 || !w.HasMore {
		t.Fatalf("window rows %v aux %d has_more %v err %v", short(idsOf(w.Rows)), len(w.Aux), w.HasMore, err)
	}
}

func TestEvictionQueueStaysBoundedUnderReplaceableChurn(t *testing.T) {
	s := New(Config{MaxEvents: 100_000})
	for i := 1; i <= 20_000; i++ {
		mustAdd(t, s, ev(i, 1, 1000+i, 30078, []string{"d", "read-state:x"}))
	}
	s.evictMu.Lock()
	n := len(s.evictQ)
	s.evictMu.Unlock()
	if s.Len() != 1 || n > 2*1+1024+1 {
		t.Fatalf("Len %d, eviction queue %d entries for one retained event", s.Len(), n)
	}
}
