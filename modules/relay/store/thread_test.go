package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

const nilUUID = "00000000-0000-0000-0000-000000000000"

func TestThreadWindowBindingMatchesUpstreamVector(t *testing.T) {
	// buzz-core thread_window.rs binding_normalizes_defaults_and_binds_every_argument.
	f := filter(t, `{"thread_window":true,"#h":["`+nilUUID+`"],"#e":["`+strings.Repeat("AB", 32)+`"],"kinds":[9,9]}`)
	q, err := parseThreadWindow(&f)
	if err != nil {
		t.Fatal(err)
	}
	got := q.binding("relay.example", strings.Repeat("ab", 32))
	if want := "tw:1:5252322dfd797ddb1d5f1150acd4cf914b9fc09e39bcf3048d25aed514b3546d"; got != want {
		t.Fatalf("binding %s, want %s", got, want)
	}
	for _, change := range []string{`"limit":49`, `"depth_limit":1`, `"include_aux":true`, `"until":0,"before_id":"` + hexID(1) + `"`} {
		g := filter(t, `{"thread_window":true,"#h":["`+nilUUID+`"],"#e":["`+strings.Repeat("ab", 32)+`"],"kinds":[9],`+change+`}`)
		q2, err := parseThreadWindow(&g)
		if err != nil {
			t.Fatal(err)
		}
		if q2.binding("relay.example", strings.Repeat("ab", 32)) == got {
			t.Fatalf("%s does not change the binding", change)
		}
	}
}

func TestThreadWindowValidation(t *testing.T) {
	base := `"thread_window":true,"#h":["` + nilUUID + `"],"#e":["` + hexID(1) + `"],"kinds":[9]`
	cases := []struct {
		name  string
		extra string
		want  string
	}{
		{"limit 0 rejects", `"limit":0`, "thread_window: limit must be an integer in 1..=200"},
		{"limit 201 rejects rather than clamps", `"limit":201`, "thread_window: limit must be an integer in 1..=200"},
		{"depth_limit 101 rejects", `"depth_limit":101`, "thread_window: depth_limit must be an integer in 1..=100"},
		{"half cursor rejects", `"until":5`, "thread_window requires both until and before_id, or neither"},
		{"bad cursor id rejects", `"until":5,"before_id":"xyz"`, "thread_window: expected a full 64-hex event id"},
		{"legacy cursor field rejects", `"thread_cursor":0`, "thread_window: unsupported or conflicting filter field"},
		{"top_level even false rejects", `"top_level":false`, "thread_window: unsupported or conflicting filter field"},
		{"authors reject", `"authors":[]`, "thread_window: unsupported or conflicting filter field"},
		{"other tags reject", `"#p":[]`, "thread_window: unsupported or conflicting filter field"},
		{"non-conversation kinds reject", `"kinds":[7]`, "thread_window supports row kinds 9, 40002, 45001, 45003 only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := `{` + base + `,` + c.extra + `}`
			if strings.Contains(c.extra, `"kinds"`) {
				js = `{"thread_window":true,"#h":["` + nilUUID + `"],"#e":["` + hexID(1) + `"],` + c.extra + `}`
			}
			f := filter(t, js)
			_, err := parseThreadWindow(&f)
			var re *RequestError
			if !errors.As(err, &re) || re.Msg != c.want {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	twoH := filter(t, `{"thread_window":true,"#h":["`+nilUUID+`","`+nilUUID+`"],"#e":["`+hexID(1)+`"],"kinds":[9]}`)
	if _, err := parseThreadWindow(&twoH); err == nil {
		t.Fatal("two #h accepted")
	}
}

// threadFixture: root 1 in chA (a UUID) with 130 replies: every 10th at
// depth 2, every 13th kind 40002, 5 per second; a reaction on the root and
// on one reply; a reply in another thread.
func threadFixture(t *testing.T) (*Store, []*nostr.Event) {
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	var replies []*nostr.Event
	for i := 0; i < 130; i++ {
		id := 1000 + (i*37)%130
		tags := [][]string{h(chA), replyTo(1)}
		if i%10 == 9 {
			tags = [][]string{h(chA), rootTag(1), replyToID(replies[i-1].ID)}
		}
		kind := 9
		if i%13 == 0 {
			kind = 40002
		}
		e := ev(id, i%4, 200+i/5, kind, tags...)
		mustAdd(t, s, e)
		replies = append(replies, e)
	}
	mustAdd(t, s, ev(2, 1, 100, 9, h(chA)))
	mustAdd(t, s, ev(3, 1, 300, 9, h(chA), replyTo(2)))
	mustAdd(t, s, ev(4, 2, 300, 7, []string{"e", hexID(1)}))
	mustAdd(t, s, ev(5, 2, 300, 7, []string{"e", replies[129].ID}))
	return s, replies
}

func TestThreadWindowPages(t *testing.T) {
	keys := testKeys(t)
	s, replies := threadFixture(t)
	rd := Reader{Signer: keys, Pubkey: pk(1), Host: "acme.localhost:3000"}
	cases := []struct {
		name  string
		extra string
		keep  func(i int) bool
		limit int
	}{
		{"all replies of kind 9 and 40002", `"kinds":[9,40002],"limit":50`, func(int) bool { return true }, 50},
		{"depth_limit 1 drops nested replies", `"kinds":[9,40002],"depth_limit":1,"limit":40`, func(i int) bool { return i%10 != 9 }, 40},
		{"kinds restrict rows", `"kinds":[9],"limit":60`, func(i int) bool { return i%13 != 0 }, 60},
		{"exactly full last page", `"kinds":[9,40002],"limit":65`, func(int) bool { return true }, 65},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []*nostr.Event
			for i, r := range replies {
				if c.keep(i) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, func(a, b *nostr.Event) int {
				if a.CreatedAt != b.CreatedAt {
					return int(b.CreatedAt - a.CreatedAt)
				}
				return strings.Compare(a.ID, b.ID)
			})
			var got []string
			cursor := ""
			for page := 0; ; page++ {
				if page > 10 {
					t.Fatal("paging did not stop")
				}
				js := `{"thread_window":true,"#h":["` + chA + `"],"#e":["` + hexID(1) + `"],"include_aux":true,` + c.extra + cursor + `}`
				w, err := s.ThreadWindow(filter(t, js), rd)
				if err != nil {
					t.Fatal(err)
				}
				checkOverlay(t, w.Bounds, nostr.KindThreadBounds, keys, "d", "h", "e")
				if !strings.HasPrefix(w.Bounds.Tags[0][1], "tw:1:") || w.Bounds.Tags[1][1] != chA || w.Bounds.Tags[2][1] != hexID(1) {
					t.Fatalf("39007 tags %v", w.Bounds.Tags)
				}
				var b bounds
				if err := json.Unmarshal([]byte(w.Bounds.Content), &b); err != nil || b.Version != 1 || b.Direction != "older" || b.HasMore != (b.NextCursor != nil) {
					t.Fatalf("39007 content %s", w.Bounds.Content)
				}
				if page == 0 && !slices.ContainsFunc(w.Aux, func(e *nostr.Event) bool { return e.ID == hexID(4) }) {
					t.Fatal("the root's reaction is missing from the aux closure")
				}
				if len(w.Rows) > c.limit {
					t.Fatalf("%d rows over limit", len(w.Rows))
				}
				got = append(got, idsOf(w.Rows)...)
				if !b.HasMore {
					break
				}
				cursor = fmt.Sprintf(`,"until":%d,"before_id":%q`, b.NextCursor.CreatedAt, b.NextCursor.ID)
			}
			if !slices.Equal(got, idsOf(want)) {
				t.Fatalf("paged %d replies, want %d (first difference at %d)", len(got), len(want), firstDiff(got, idsOf(want)))
			}
		})
	}
	t.Run("a root in another channel serves nothing", func(t *testing.T) {
		js := `{"thread_window":true,"#h":["` + chB + `"],"#e":["` + hexID(1) + `"],"kinds":[9]}`
		w, err := s.ThreadWindow(filter(t, js), rd)
		if err != nil || w.Served {
			t.Fatalf("served %v, %v", w.Served, err)
		}
	})
	t.Run("a deleted root still serves its replies", func(t *testing.T) {
		s.Delete(hexID(1))
		js := `{"thread_window":true,"#h":["` + chA + `"],"#e":["` + hexID(1) + `"],"kinds":[9],"limit":5}`
		w, err := s.ThreadWindow(filter(t, js), rd)
		if err != nil || !w.Served || len(w.Rows) != 5 || !w.HasMore {
			t.Fatalf("served %v rows %d has_more %v err %v", w.Served, len(w.Rows), w.HasMore, err)
		}
	})
}

func TestLegacyThreadReadIsOldestFirstWithCursor(t *testing.T) {
	s, replies := threadFixture(t)
	want := slices.Clone(replies)
	slices.SortFunc(want, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(a.CreatedAt - b.CreatedAt)
		}
		return strings.Compare(b.ID, a.ID)
	})
	var got []string
	cursor := ""
	for page := 0; page < 10; page++ {
		js := `[{"kinds":[9,40002],"#h":["` + chA + `"],"#e":["` + hexID(1) + `"],"depth_limit":100,"limit":50` + cursor + `}]`
		fs, err := ParseFilters([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.BridgeQuery(fs, Reader{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		got = append(got, idsOf(evs)...)
		last := evs[len(evs)-1]
		cursor = fmt.Sprintf(`,"thread_cursor":%d,"thread_cursor_id":%q`, last.CreatedAt, last.ID)
	}
	if !slices.Equal(got, idsOf(want)) {
		t.Fatalf("legacy walk returned %d, want %d (first difference at %d)", len(got), len(want), firstDiff(got, idsOf(want)))
	}
}
