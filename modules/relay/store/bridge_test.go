package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestBridgeValidationMessages(t *testing.T) {
	tw := `{"thread_window":true,"#h":["` + nilUUID + `"],"#e":["` + hexID(1) + `"],"kinds":[9]}`
	cases := []struct {
		name string
		body string
		want string
	}{
		{"before_id needs until", `[{"kinds":[9],"before_id":"` + hexID(1) + `"}]`, "before_id requires until to be set"},
		{"before_id must be hex", `[{"kinds":[9],"until":5,"before_id":"zz"}]`, "before_id must be a 64-char hex event id"},
		{"top_level needs one #h", `[{"top_level":true,"#h":["a","b"]}]`, "top_level requires exactly one #h channel"},
		{"top_level without #h", `[{"top_level":true}]`, "top_level requires exactly one #h channel"},
		{"top_level half cursor (until)", `[{"top_level":true,"#h":["a"],"until":5}]`, "top_level cursor requires both until and before_id, or neither"},
		{"top_level half cursor (before_id)", `[{"top_level":true,"#h":["a"],"before_id":"` + hexID(1) + `"}]`, "top_level cursor requires both until and before_id, or neither"},
		{"top_level bad before_id", `[{"top_level":true,"#h":["a"],"until":5,"before_id":"x"}]`, "top_level: before_id must be a 64-hex event id"},
		{"five thread windows", `[` + tw + `,` + tw + `,` + tw + `,` + tw + `,` + tw + `]`, "at most four thread windows per query"},
		{"thread windows do not mix", `[` + tw + `,{"kinds":[9]}]`, "thread_window filters cannot be mixed with other filters"},
		{"search does not mix", `[{"search":"x"},{"kinds":[9]}]`, "mixed search and non-search filters not supported"},
		{"legacy thread read needs one root", `[{"depth_limit":10,"#e":["a","b"]}]`, "depth_limit requires exactly one #e root"},
		{"feed_types unsupported", `[{"feed_types":["mentions"]}]`, "feed_types is not supported by this relay"},
	}
	s := New(Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := ParseFilters([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.BridgeQuery(fs, Reader{Signer: testKeys(t)})
			var re *RequestError
			if !errors.As(err, &re) || re.Msg != c.want {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestBridgeQueryModes(t *testing.T) {
	keys := testKeys(t)
	s := New(Config{})
	for i := 1; i <= 30; i++ {
		e := ev(i, i%3, 100+i, 9, h(chA))
		e.Content = fmt.Sprintf("note %d about go", i)
		mustAdd(t, s, e)
	}
	mustAdd(t, s, ev(40, 1, 200, 7, []string{"e", hexID(30)}))
	mustAdd(t, s, ev(41, 1, 201, 7, []string{"e", hexID(1)}))
	rd := Reader{Signer: keys}
	q := func(body string) []*nostr.Event {
		t.Helper()
		fs, err := ParseFilters([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.BridgeQuery(fs, rd)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	t.Run("include_aux on a plain filter appends the rows' aux only", func(t *testing.T) {
		got := idsOf(q(`[{"kinds":[9],"#h":["` + chA + `"],"include_aux":true,"limit":2}]`))
		if !slices.Equal(got, hexIDs(30, 29, 40)) {
			t.Fatalf("got %v", short(got))
		}
	})
	t.Run("search pages by offset, newest first", func(t *testing.T) {
		got := idsOf(q(`[{"search":"note 2","limit":3,"page":1}]`))
		// "note 2" matches 2, 20..29, newest first: 29 28 27 | 26 25 24 | ...
		if !slices.Equal(got, hexIDs(26, 25, 24)) {
			t.Fatalf("got %v", short(got))
		}
	})
	t.Run("thread_window false keeps the legacy thread read", func(t *testing.T) {
		mustAdd(t, s, ev(50, 1, 300, 9, h(chA)))
		mustAdd(t, s, ev(51, 2, 301, 9, h(chA), replyTo(50)))
		mustAdd(t, s, ev(52, 2, 302, 9, h(chA), replyTo(50)))
		got := idsOf(q(`[{"thread_window":false,"#e":["` + hexID(50) + `"],"depth_limit":5,"kinds":[9]}]`))
		if !slices.Equal(got, hexIDs(51, 52)) {
			t.Fatalf("got %v", short(got))
		}
	})
	t.Run("a window filter and a plain filter share one answer", func(t *testing.T) {
		evs := q(`[{"ids":["` + hexID(5) + `"]},{"top_level":true,"#h":["` + chA + `"],"kinds":[9],"limit":2}]`)
		kinds := []int{}
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		if !slices.Equal(kinds, []int{9, 9, 9, nostr.KindWindowBounds}) || evs[0].ID != hexID(5) {
			t.Fatalf("kinds %v", kinds)
		}
	})
}

func TestConcurrentAddAndQuery(t *testing.T) {
	keys := testKeys(t)
	s := New(Config{MaxEvents: 3000})
	chans := []string{chA, chB, nilUUID}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				id := w*100000 + i + 1
				ch := chans[i%3]
				tags := [][]string{h(ch)}
				if i%4 == 3 {
					tags = append(tags, replyTo(id-3)) // same writer's message three back: same channel
				}
				s.Add(ev(id, w, 1000+i/10, 9, tags...))
				if i%50 == 0 {
					s.Add(ev(900000+id, w, 1000+i, 7, []string{"e", hexID(id)}))
					s.Delete(hexID(id - 1))
					s.Add(ev(800000+id, w, 1000+i, 0))
				}
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				ch := chans[i%3]
				f := filter(t, `{"top_level":true,"#h":["`+ch+`"],"kinds":[9],"limit":20,"include_aux":true,"include_summaries":true}`)
				w, err := s.ChannelWindow(f, Reader{Signer: keys})
				if err != nil || !w.Served {
					t.Errorf("window: %v", err)
					return
				}
				got := s.Query([]Filter{{Kinds: []int{9, 0}, Limit: ptr(50)}}, Reader{})
				for j := 1; j < len(got); j++ {
					if got[j].CreatedAt > got[j-1].CreatedAt {
						t.Errorf("query out of order")
						return
					}
				}
				if _, err := s.Count([]Filter{{Kinds: []int{9}}}, Reader{}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if s.Len() > 3000 {
		t.Fatalf("Len %d over cap", s.Len())
	}
}

func ptr[T any](v T) *T { return &v }
