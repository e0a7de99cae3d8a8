package desktop

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

const (
	viewer = "vvvv"
	relayR = "rrrr"
)

func ident(nch, members int) *Identity {
	id := &Identity{Viewer: viewer, Channels: channels(nch), Relay: relayR}
	for i := members - 1; i >= 0; i-- { // unsorted, to see the sort
		id.CoMembers = append(id.CoMembers, fmt.Sprintf("m%03d", i))
	}
	return id
}

func filtersJSON(t *testing.T, fs []relayclient.Filter) string {
	t.Helper()
	b, err := relayclient.FiltersJSON(fs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const kindsJSON = `[9,40002,40008,45001,45003,40099,40100,40003,5,9005,7,39000,39002,39005,20002]`

// Golden REQ filters of docs/desktop-requests.md §4 and §5.15 (S = 1799999700).
func TestSubFiltersGolden(t *testing.T) {
	id := ident(12, 3)
	for _, c := range []struct {
		name string
		spec SubSpec
		want string
	}{
		{"profile subscription", SubSpec{Route: RouteProfiles, Since: 1799999700},
			`[{"kinds":[0,10100,30177],"since":1799999700,"limit":500},{"kinds":[30315],"#d":["general"],"since":1799999700,"limit":500},{"kinds":[30030],"#d":["buzz:custom-emoji"],"since":1799999700,"limit":500}]`},
		{"membership subscription", SubSpec{Route: RouteMembership, Since: 1799999700},
			`[{"kinds":[44100,44101],"#p":["vvvv"],"since":1799999700,"limit":500},{"authors":["vvvv"],"kinds":[30078],"#t":["read-state"],"since":1799999700,"limit":500},{"authors":["vvvv"],"kinds":[30300],"since":1799999700,"limit":500}]`},
		{"presence subscription", SubSpec{Route: RoutePresence, Since: 1799999700, LiveOnly: true},
			`[{"authors":["m000","m001","m002"],"kinds":[20001],"since":1799999700,"limit":0}]`},
		{"replaying batch: one filter per channel", SubSpec{Route: RouteBatch, Channels: []int{0, 1}, Since: 1799999700},
			`[{"kinds":` + kindsJSON + `,"#h":["c00"],"since":1799999700,"limit":500},{"kinds":` + kindsJSON + `,"#h":["c01"],"since":1799999700,"limit":500}]`},
		{"replay closed at EOSE has the batch shape", SubSpec{Route: RouteReplay, Channels: []int{11}, Since: 1799999700},
			`[{"kinds":` + kindsJSON + `,"#h":["c11"],"since":1799999700,"limit":500}]`},
		{"live-only channel subscription: one filter over all channels", SubSpec{Route: RouteLive, Channels: []int{0, 1, 2}, Since: 1799999700, LiveOnly: true},
			`[{"kinds":` + kindsJSON + `,"#h":["c00","c01","c02"],"since":1799999700,"limit":0}]`},
		{"tick replacement keeps the since and goes live-only", SubSpec{Route: RouteBatch, Channels: []int{3, 4}, Since: 1799999700, LiveOnly: true},
			`[{"kinds":` + kindsJSON + `,"#h":["c03","c04"],"since":1799999700,"limit":0}]`},
		{"silence probe", SubSpec{Route: RouteMembership, Probe: true, Since: 1800000060, LiveOnly: true},
			`[{"kinds":[44100,44101],"#p":["vvvv"],"since":1800000060,"limit":0}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := filtersJSON(t, SubFilters(c.spec, id)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestPresenceAuthorsAreDedupedSortedAndCappedAt256(t *testing.T) {
	id := ident(1, 300)
	id.CoMembers = append(id.CoMembers, "m000")
	a := id.PresenceAuthors()
	if len(a) != 256 || a[0] != "m000" || a[1] != "m001" || a[255] != "m255" {
		t.Errorf("authors %d: %v … %v", len(a), a[:2], a[len(a)-1])
	}
}

// Golden POST /query bodies of docs/desktop-requests.md §5.
func TestFixedRequestsGolden(t *testing.T) {
	id := ident(130, 150)
	body := func(rs []Request, i int) string { return filtersJSON(t, rs[i].Filters) }
	ops := func(rs []Request) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Op)
		}
		return strings.Join(s, ",")
	}
	t.Run("metadata", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadMetadata}}, ident(2, 0))
		if got, want := body(rs, 0), `[{"kinds":[39000],"#d":["c00","c01"],"limit":500}]`; len(rs) != 1 || got != want {
			t.Errorf("got %d: %s", len(rs), got)
		}
	})
	t.Run("sidebar: one request, two filters", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadSidebar}}, id)
		want := `[{"authors":["vvvv"],"kinds":[30078],"#d":["channel-sections"],"limit":1},{"authors":["vvvv"],"kinds":[30078],"#d":["channel-stars"],"limit":1}]`
		if got := body(rs, 0); len(rs) != 1 || got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("profiles: 500 authors per request", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadProfiles}}, ident(1, 2))
		if got, want := body(rs, 0), `[{"authors":["m000","m001"],"kinds":[0],"limit":500}]`; got != want {
			t.Errorf("got %s", got)
		}
		if n := len(FixedRequests(Read{Key: ReadKey{Kind: ReadProfiles}}, ident(1, 501))); n != 2 {
			t.Errorf("501 co-members: %d requests", n)
		}
	})
	t.Run("statuses: 100 authors per request, limit = authors", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadStatuses}}, id)
		if len(rs) != 2 || len(rs[1].Filters[0].Authors) != 50 {
			t.Fatalf("%d requests", len(rs))
		}
		if got := body(rs, 1); !strings.HasSuffix(got, `"kinds":[30315],"#d":["general"],"limit":50}]`) {
			t.Errorf("got %s", got)
		}
	})
	t.Run("emoji", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadEmoji}}, id)
		if got, want := body(rs, 0), `[{"kinds":[30030],"#d":["buzz:custom-emoji"],"limit":500}]`; got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("full unread repair: snapshot, then chunks of 128", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadUnread}, Snapshot: true}, id)
		if got := ops(rs); got != "desktop_read_state,desktop_unread,desktop_unread" {
			t.Fatalf("ops %s", got)
		}
		if got, want := body(rs, 0), `[{"authors":["vvvv"],"kinds":[30078],"read_state_snapshot":1}]`; got != want {
			t.Errorf("snapshot %s", got)
		}
		if got, want := body(rs, 2), `[{"kinds":[9,40002,40008],"#h":["c128","c129"],"limit":500,"include_aux":true}]`; got != want {
			t.Errorf("second chunk %s", got)
		}
		if n := len(rs[1].Filters[0].Tags["h"]); n != 128 {
			t.Errorf("first chunk %d channels", n)
		}
	})
	t.Run("covered unread repair has no snapshot", func(t *testing.T) {
		if got := ops(FixedRequests(Read{Key: ReadKey{Kind: ReadUnread}}, ident(5, 1))); got != "desktop_unread" {
			t.Errorf("ops %s", got)
		}
	})
	t.Run("reminders", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadReminders}}, id)
		if got, want := body(rs, 0), `[{"authors":["vvvv"],"kinds":[30300],"limit":200}]`; got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("notices of window 2", func(t *testing.T) {
		rs := FixedRequests(Read{Key: ReadKey{Kind: ReadNotices, Index: 2}}, id)
		if got, want := body(rs, 0), `[{"kinds":[40099],"#h":["c02"],"limit":20}]`; got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("every fixed read's ops match its planned requests", func(t *testing.T) {
		for k := ReadKind(0); k < numReadKinds; k++ {
			for _, snap := range []bool{false, true} {
				r := Read{Key: ReadKey{Kind: k}, Snapshot: snap}
				rs := FixedRequests(r, id)
				if rs == nil {
					continue
				}
				if got, want := ops(rs), strings.Join(r.Requests(len(id.Channels), len(id.CoMembers)), ","); got != want {
					t.Errorf("%v: ops %s, planned %s", r, got, want)
				}
			}
		}
	})
}

func TestThreadFiltersGolden(t *testing.T) {
	root := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name string
		f    relayclient.Filter
		want string
	}{
		{"root lookup", RootLookupFilter("c00", root), `[{"ids":["` + root + `"],"#h":["c00"],"limit":1}]`},
		{"thread page", ThreadPageFilter("c00", root), `[{"kinds":[9,40002],"#e":["` + root + `"],"#h":["c00"],"limit":50,"depth_limit":100,"include_aux":true,"thread_window":true}]`},
		{"root search", RootSearchFilter("c00"), `[{"kinds":[9],"#h":["c00"],"limit":50,"include_summaries":true,"top_level":true}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := filtersJSON(t, []relayclient.Filter{c.f}); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func hexID(n int) string { return fmt.Sprintf("%064x", n) }

// windowPage builds a reply: rows (newest first) from created_at top down,
// an older aux reaction, and the relay's bounds for d.
func windowPage(ch, d string, rows int, top int64, hasMore bool, signer string) []nostr.Event {
	var evs []nostr.Event
	for i := 0; i < rows; i++ {
		evs = append(evs, nostr.Event{ID: hexID(int(top) - i), Kind: 9, CreatedAt: top - int64(i), Tags: [][]string{{"h", ch}}})
	}
	last := evs[len(evs)-1]
	// an aux event older than the last row: the cursor must not come from it
	evs = append(evs, nostr.Event{ID: hexID(1), Kind: 7, CreatedAt: last.CreatedAt - 100, Tags: [][]string{{"e", last.ID}}})
	content := `{"has_more":false,"next_cursor":null,"thread_replies_in_channel":false}`
	if hasMore {
		content = fmt.Sprintf(`{"has_more":true,"next_cursor":{"created_at":%d,"id":"%s"},"thread_replies_in_channel":false}`, last.CreatedAt, last.ID)
	}
	return append(evs, nostr.Event{ID: hexID(2), PubKey: signer, Kind: 39006, Content: content, Tags: [][]string{{"d", d}, {"h", ch}}})
}

// Review fix (PR "Testing"): the catch-up sends the head, then exactly the
// bounds' cursor (until + before_id of the last row, not the older aux
// event), and stops when the bounds say history is exhausted even though
// the page came back full. Mutant "continue while a page comes back full"
// (see the commit) asks for a fourth page and fails this test.
func TestWindowCatchUpFollowsTheBoundsCursorAndStopsOnHasMoreFalse(t *testing.T) {
	p := &WindowPager{Channel: "c00", Relay: relayR}
	var sent []string
	pages := []struct {
		rows    int
		top     int64
		hasMore bool
	}{{20, 1000, true}, {60, 980, true}, {60, 920, false}} // the last page is full
	for i, pg := range pages {
		f := p.Filter()
		sent = append(sent, filtersJSON(t, []relayclient.Filter{f}))
		d := "c00:head"
		if i > 0 {
			d = fmt.Sprintf("c00:%d:%s", f.Until, f.Extra["before_id"])
		}
		more, err := p.Advance(windowPage("c00", d, pg.rows, pg.top, pg.hasMore, relayR))
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if more != (i < len(pages)-1) {
			t.Fatalf("page %d: more = %v", i, more)
		}
	}
	if !p.Done() {
		t.Error("not done after has_more:false")
	}
	want := []string{
		`[{"kinds":[9,40002,40008,40099],"#h":["c00"],"limit":20,"include_aux":true,"include_summaries":true,"top_level":true}]`,
		`[{"kinds":[9,40002,40008,40099],"#h":["c00"],"until":981,"limit":60,"before_id":"` + hexID(981) + `","include_aux":true,"include_summaries":true,"top_level":true}]`,
		`[{"kinds":[9,40002,40008,40099],"#h":["c00"],"until":921,"limit":60,"before_id":"` + hexID(921) + `","include_aux":true,"include_summaries":true,"top_level":true}]`,
	}
	if len(sent) != len(want) {
		t.Fatalf("%d pages", len(sent))
	}
	for i := range want {
		if sent[i] != want[i] {
			t.Errorf("page %d:\n got %s\nwant %s", i, sent[i], want[i])
		}
	}
}

func TestWindowCatchUpReadsAtMostFiveOlderPages(t *testing.T) {
	p := &WindowPager{Channel: "c00"}
	pages := 0
	top := int64(10_000)
	for more := true; more; pages++ {
		f := p.Filter()
		d := "c00:head"
		if f.Until != 0 {
			d = fmt.Sprintf("c00:%d:%s", f.Until, f.Extra["before_id"])
		}
		var err error
		more, err = p.Advance(windowPage("c00", d, 60, top, true, "anyone"))
		if err != nil {
			t.Fatal(err)
		}
		top -= 60
		if pages > 10 {
			t.Fatal("no bound")
		}
	}
	if pages != 1+MaxOlderPages {
		t.Errorf("%d pages, want %d", pages, 1+MaxOlderPages)
	}
}

func TestWindowPageValidation(t *testing.T) {
	good := func() []nostr.Event { return windowPage("c00", "c00:head", 5, 100, true, relayR) }
	for _, c := range []struct {
		name string
		page func() []nostr.Event
		want string
	}{
		{"no bounds is inaccessible, not exhausted", func() []nostr.Event { return nil }, "no window bounds"},
		{"bounds from another signer", func() []nostr.Event { return windowPage("c00", "c00:head", 5, 100, true, "mallory") }, "not the relay"},
		{"bounds for another cursor", func() []nostr.Event { return windowPage("c00", "c00:5:ab", 5, 100, true, relayR) }, `want "c00:head"`},
		{"bounds for another channel", func() []nostr.Event {
			evs := good()
			evs[len(evs)-1].Tags[1] = []string{"h", "c01"}
			return evs
		}, `bounds h "c01"`},
		{"two bounds", func() []nostr.Event { evs := good(); return append(evs, evs[len(evs)-1]) }, "two bounds"},
		{"has_more without next_cursor", func() []nostr.Event {
			evs := good()
			evs[len(evs)-1].Content = `{"has_more":true,"next_cursor":null}`
			return evs
		}, "has_more true with next_cursor"},
		{"content not JSON", func() []nostr.Event {
			evs := good()
			evs[len(evs)-1].Content = `{`
			return evs
		}, "bounds content"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &WindowPager{Channel: "c00", Relay: relayR}
			_, err := p.Advance(c.page())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want it to say %q", err, c.want)
			}
			if c.name == "no bounds is inaccessible, not exhausted" && !errors.Is(err, ErrNoBounds) {
				t.Error("not ErrNoBounds")
			}
		})
	}
	t.Run("a cursor that does not advance", func(t *testing.T) {
		p := &WindowPager{Channel: "c00"}
		if _, err := p.Advance(windowPage("c00", "c00:head", 5, 100, true, "x")); err != nil {
			t.Fatal(err)
		}
		// the same page again: next_cursor equals the cursor sent
		_, err := p.Advance(windowPage("c00", "c00:96:"+hexID(96), 5, 100, true, "x"))
		if err == nil || !strings.Contains(err.Error(), "does not advance") {
			t.Errorf("err %v", err)
		}
	})
}

func TestRosterPager(t *testing.T) {
	page := func(n int, top int64) []nostr.Event {
		var evs []nostr.Event
		for i := 0; i < n; i++ {
			// equal timestamps in pairs, ids ascending within a timestamp
			evs = append(evs, nostr.Event{ID: hexID(i), Kind: 39002, CreatedAt: top - int64(i/2)})
		}
		return evs
	}
	p := &RosterPager{Viewer: viewer}
	if got := filtersJSON(t, []relayclient.Filter{p.Filter()}); got != `[{"kinds":[39002],"#p":["vvvv"],"limit":500}]` {
		t.Errorf("first page %s", got)
	}
	if !p.Advance(page(500, 5000)) {
		t.Fatal("a full page ends the read")
	}
	// the oldest roster: created_at 5000-249, the larger id of that pair
	want := `[{"kinds":[39002],"#p":["vvvv"],"until":4751,"limit":500,"before_id":"` + hexID(499) + `"}]`
	if got := filtersJSON(t, []relayclient.Filter{p.Filter()}); got != want {
		t.Errorf("second page\n got %s\nwant %s", got, want)
	}
	if p.Advance(page(499, 4000)) || !p.Done() {
		t.Error("a short page does not end the read")
	}
	p = &RosterPager{Viewer: viewer}
	n := 0
	for more := true; more; n++ {
		more = p.Advance(page(500, 5000))
	}
	if n != MaxRosterPages {
		t.Errorf("%d pages, want at most %d", n, MaxRosterPages)
	}
}

func TestCheckReadStateSnapshot(t *testing.T) {
	check := CheckReadStateSnapshot(viewer, "x")
	ok := `{"read_state_snapshot":1,"complete":true,"pubkey":"vvvv","community_id":"x","snapshot_id":"y","events":[{"tags":[["d","a"]]},{"tags":[["d","b"]]}]}`
	if err := check([]byte(ok)); err != nil {
		t.Errorf("valid snapshot: %v", err)
	}
	for name, body := range map[string]string{
		"an event array":    `[]`,
		"another pubkey":    `{"read_state_snapshot":1,"pubkey":"x","events":[]}`,
		"no version":        `{"pubkey":"vvvv","events":[]}`,
		"no events":         `{"read_state_snapshot":1,"pubkey":"vvvv"}`,
		"a repeated d tag":  `{"read_state_snapshot":1,"pubkey":"vvvv","community_id":"x","events":[{"tags":[["d","a"]]},{"tags":[["d","a"]]}]}`,
		"another community": `{"read_state_snapshot":1,"pubkey":"vvvv","community_id":"z","events":[]}`,
	} {
		if check([]byte(body)) == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestPickRootTakesTheRowWithTheMostReplies(t *testing.T) {
	sum := func(root string, n int) nostr.Event {
		return nostr.Event{Kind: 39005, Tags: [][]string{{"e", root}, {"d", root}}, Content: fmt.Sprintf(`{"reply_count":%d}`, n)}
	}
	evs := []nostr.Event{
		{ID: "a", Kind: 9, CreatedAt: 10}, {ID: "b", Kind: 9, CreatedAt: 9}, {ID: "c", Kind: 9, CreatedAt: 8},
		sum("a", 2), sum("b", 30), sum("zz", 99), // zz is not a row of this page
	}
	if got := PickRoot(evs); got != "b" {
		t.Errorf("root %q", got)
	}
	if got := PickRoot(evs[:3]); got != "" {
		t.Errorf("no summaries: %q", got)
	}
}
