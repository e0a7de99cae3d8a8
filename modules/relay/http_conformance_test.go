package relay

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// §3.2: NIP-98 on the bridge, message for message.
func TestNIP98Bridge(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	host := r.URLs().Host
	body := []byte(`[{"kinds":[0]}]`)
	u := "http://" + host + "/query"
	replayed := nip98(t, alice, "POST", u, body, true, time.Now())
	cases := []struct {
		name   string
		hdr    map[string]string
		body   []byte
		status int
		err    string
	}{
		{"no Authorization", nil, body, 401, "missing Nostr auth"},
		{"not base64", map[string]string{"Authorization": "Nostr !!!"}, body, 401, "invalid base64 in Nostr auth"},
		{"u names another path", map[string]string{"Authorization": nip98(t, alice, "POST", "http://"+host+"/count", body, true, time.Now())}, body, 401, "NIP-98: url mismatch"},
		{"method mismatch", map[string]string{"Authorization": nip98(t, alice, "GET", u, body, true, time.Now())}, body, 401, "NIP-98: method mismatch"},
		{"payload over other bytes", map[string]string{"Authorization": nip98(t, alice, "POST", u, []byte("[]"), true, time.Now())}, body, 401, "NIP-98: payload mismatch"},
		{"expired", map[string]string{"Authorization": nip98(t, alice, "POST", u, body, true, time.Now().Add(-2*time.Minute))}, body, 401, "NIP-98: expired"},
		{"payload is optional on the bridge", map[string]string{"Authorization": nip98(t, alice, "POST", u, body, false, time.Now())}, body, 200, ""},
		{"localhost alias in u", map[string]string{"Authorization": nip98(t, alice, "POST", strings.Replace(u, "127.0.0.1", "localhost", 1), body, true, time.Now())}, body, 200, ""},
		{"first use", map[string]string{"Authorization": replayed}, body, 200, ""},
		{"replay of the same event", map[string]string{"Authorization": replayed}, body, 401, "NIP-98: replay detected"},
		{"X-Pubkey is off by default", map[string]string{"X-Pubkey": alice.PubKey()}, body, 401, "missing Nostr auth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := doHTTP(t, r, "POST", "", "/query", tc.body, tc.hdr)
			if resp.status != tc.status {
				t.Fatalf("HTTP %d %s, want %d", resp.status, resp.body, tc.status)
			}
			if tc.err != "" && resp.errorText(t) != tc.err {
				t.Errorf("error %q, want %q", resp.errorText(t), tc.err)
			}
		})
	}
	dev := startRelay(t, func(c *Config) { c.AllowDevPubkey = true })
	if resp := doHTTP(t, dev, "POST", "", "/query", body, map[string]string{"X-Pubkey": alice.PubKey()}); resp.status != 200 {
		t.Errorf("X-Pubkey with the dev fallback on: %d %s", resp.status, resp.body)
	}
}

// §3.3: POST /events shares the ingest path; WS-only kinds are refused.
func TestHTTPEvents(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	m := ev(t, alice, 9, "over http", []string{"h", ch})
	var ok struct {
		ID       string `json:"event_id"`
		Accepted bool   `json:"accepted"`
		Message  string `json:"message"`
	}
	resp := post(t, r, alice, "/events", m)
	resp.json(t, &ok)
	if resp.status != 200 || ok.ID != m.ID || !ok.Accepted || ok.Message != "" {
		t.Fatalf("publish: %d %s", resp.status, resp.body)
	}
	resp = post(t, r, alice, "/events", m)
	resp.json(t, &ok)
	if resp.status != 200 || !ok.Accepted || ok.Message != "duplicate:" {
		t.Fatalf("duplicate: %d %s", resp.status, resp.body)
	}
	cases := []struct {
		name   string
		signer *nostr.Keys
		e      *nostr.Event
		status int
		err    string
	}{
		{"presence is WS-only", alice, ev(t, alice, 20001, "online"), 400, "invalid: kind 20001 is only accepted via WebSocket"},
		{"gift wrap is WS-only", alice, ev(t, alice, 1059, "x", []string{"p", bob.PubKey()}), 400, "invalid: kind 1059 is only accepted via WebSocket"},
		{"channel kind without h", alice, ev(t, alice, 9, "x"), 400, "invalid: channel-scoped events must include an h tag"},
		{"pubkey differs from the NIP-98 signer", bob, ev(t, alice, 9, "x", []string{"h", ch}), 403, "invalid: event pubkey does not match authenticated identity"},
	}
	for _, tc := range cases {
		resp := post(t, r, tc.signer, "/events", tc.e)
		if resp.status != tc.status || resp.errorText(t) != tc.err {
			t.Errorf("%s: %d %s", tc.name, resp.status, resp.body)
		}
	}
	// Typing is allowed over HTTP.
	if resp := post(t, r, alice, "/events", ev(t, alice, 20002, "", []string{"h", ch})); resp.status != 200 {
		t.Errorf("typing over HTTP: %d %s", resp.status, resp.body)
	}
}

// §3.4, §3.7: /query and /count with filter arrays, cursors and access.
func TestHTTPQueryAndCount(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	priv := c.createChannel("p", "private")
	base := time.Now().Add(-time.Minute)
	var ids []string
	for i := 0; i < 5; i++ {
		e := evAt(t, alice, 9, base.Add(time.Duration(i)*time.Second), fmt.Sprint("m", i), []string{"h", ch})
		c.mustPublish(e)
		ids = append(ids, e.ID)
	}
	c.mustPublish(ev(t, alice, 9, "secret", []string{"h", priv}))

	got := queryEvents(t, r, bob, map[string]any{"kinds": []int{9}, "#h": []string{ch, priv}, "limit": 3})
	if len(got) != 3 || got[0].ID != ids[4] || got[2].ID != ids[2] {
		t.Fatalf("newest 3 of the open channel, private left out: %v", got)
	}
	older := queryEvents(t, r, bob, map[string]any{"kinds": []int{9}, "#h": []string{ch}, "until": got[2].CreatedAt, "before_id": got[2].ID})
	if len(older) != 2 || older[0].ID != ids[1] {
		t.Fatalf("until+before_id page: %d events", len(older))
	}
	for _, tc := range []struct {
		filter map[string]any
		err    string
	}{
		{map[string]any{"kinds": []int{9}, "before_id": ids[0]}, "before_id requires until to be set"},
		{map[string]any{"kinds": []int{9}, "until": 1, "before_id": "xyz"}, "before_id must be a 64-char hex event id"},
	} {
		resp := post(t, r, bob, "/query", []any{tc.filter})
		if resp.status != 400 || resp.errorText(t) != tc.err {
			t.Errorf("%v: %d %s", tc.filter, resp.status, resp.body)
		}
	}
	var n struct{ Count int }
	resp := post(t, r, bob, "/count", []any{map[string]any{"kinds": []int{9}, "#h": []string{ch}}})
	resp.json(t, &n)
	if resp.status != 200 || n.Count != 5 {
		t.Fatalf("/count: %d %s", resp.status, resp.body)
	}
	if got := queryEvents(t, r, alice, map[string]any{"kinds": []int{9}, "#h": []string{priv}}); len(got) != 1 {
		t.Errorf("member reads the private channel: %d", len(got))
	}
}

// windowPage runs a top_level query and splits rows, aux, 39005 and 39006.
type windowPage struct {
	rows, aux, summaries, bounds []*nostr.Event
}

func topLevel(t *testing.T, r *Relay, k *nostr.Keys, filter map[string]any) windowPage {
	t.Helper()
	var p windowPage
	for _, e := range queryEvents(t, r, k, filter) {
		switch e.Kind {
		case 39005:
			p.summaries = append(p.summaries, e)
		case 39006:
			p.bounds = append(p.bounds, e)
		case 7, 5, 9005, 40003:
			p.aux = append(p.aux, e)
		default:
			p.rows = append(p.rows, e)
		}
	}
	return p
}

type boundsContent struct {
	HasMore    bool `json:"has_more"`
	NextCursor *struct {
		CreatedAt int64  `json:"created_at"`
		ID        string `json:"id"`
	} `json:"next_cursor"`
}

// §3.5: NIP-CW channel window pagination.
func TestChannelWindow(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	priv := c.createChannel("p", "private")
	base := time.Now().Add(-time.Minute)
	var roots []*nostr.Event
	for i := 0; i < 5; i++ {
		// Two rows share a second so the id tie-break is exercised.
		e := evAt(t, alice, 9, base.Add(time.Duration(i/2)*time.Second), fmt.Sprint("m", i), []string{"h", ch})
		c.mustPublish(e)
		roots = append(roots, e)
	}
	newest := roots[4]
	reply := ev(t, bob, 9, "reply", []string{"h", ch}, []string{"e", newest.ID, "", "reply"})
	c2 := authed(t, r, bob)
	c2.mustPublish(reply)
	bcast := ev(t, bob, 9, "broadcast reply", []string{"h", ch}, []string{"e", newest.ID, "", "reply"}, []string{"broadcast", "1"})
	c2.mustPublish(bcast)
	react := ev(t, bob, 7, "+", []string{"e", newest.ID})
	c2.mustPublish(react)

	want := []*nostr.Event{bcast}
	sorted := append([]*nostr.Event(nil), roots...)
	sortEvents(sorted)
	want = append(want, sorted...)

	var seen []*nostr.Event
	f := map[string]any{"top_level": true, "#h": []string{ch}, "kinds": []int{9}, "limit": 2, "include_aux": true, "include_summaries": true}
	cursorD := ch + ":head"
	for page := 0; page < 5; page++ {
		p := topLevel(t, r, bob, f)
		if len(p.bounds) != 1 {
			t.Fatalf("page %d: %d bounds events", page, len(p.bounds))
		}
		b := p.bounds[0]
		if b.PubKey != r.RelayPubKey() || b.Verify() != nil || b.TagValue("d") != cursorD || b.TagValue("h") != ch {
			t.Fatalf("page %d: bounds %+v", page, b)
		}
		var bc boundsContent
		json.Unmarshal([]byte(b.Content), &bc)
		seen = append(seen, p.rows...)
		if page == 0 {
			if len(p.aux) != 1 || p.aux[0].ID != react.ID {
				t.Errorf("head page aux: %v", kindsOf(p.aux))
			}
			if len(p.summaries) != 1 || p.summaries[0].TagValue("e") != newest.ID {
				t.Errorf("head page summaries: %d", len(p.summaries))
			} else {
				var s struct {
					Replies     int `json:"reply_count"`
					Descendants int `json:"descendant_count"`
				}
				json.Unmarshal([]byte(p.summaries[0].Content), &s)
				if s.Replies != 2 || s.Descendants != 2 {
					t.Errorf("summary %s", p.summaries[0].Content)
				}
			}
		}
		if !bc.HasMore {
			if bc.NextCursor != nil {
				t.Fatal("next_cursor set with has_more false")
			}
			break
		}
		last := p.rows[len(p.rows)-1]
		if bc.NextCursor == nil || bc.NextCursor.ID != last.ID || bc.NextCursor.CreatedAt != last.CreatedAt {
			t.Fatalf("page %d: next_cursor %+v, last row %s", page, bc.NextCursor, short(last.ID))
		}
		f["until"], f["before_id"] = last.CreatedAt, last.ID
		cursorD = ch + ":" + strconv.FormatInt(last.CreatedAt, 10) + ":" + last.ID
	}
	if len(seen) != len(want) {
		t.Fatalf("paged %d rows, want %d (5 roots + 1 broadcast reply, plain reply excluded)", len(seen), len(want))
	}
	for i := range want {
		if seen[i].ID != want[i].ID {
			t.Fatalf("row %d: %s, want %s", i, short(seen[i].ID), short(want[i].ID))
		}
	}
	// Inaccessible channel: [] and no 39006.
	if got := queryEvents(t, r, bob, map[string]any{"top_level": true, "kinds": []int{9}, "#h": []string{priv}}); len(got) != 0 {
		t.Fatalf("private channel window for a non-member: %v", kindsOf(got))
	}
	for _, tc := range []struct {
		filter map[string]any
		err    string
	}{
		{map[string]any{"top_level": true, "kinds": []int{9}, "#h": []string{ch, priv}}, "top_level requires exactly one #h channel"},
		{map[string]any{"top_level": true, "kinds": []int{9}, "#h": []string{ch}, "until": 5}, "top_level cursor requires both until and before_id, or neither"},
		{map[string]any{"top_level": true, "kinds": []int{9}, "#h": []string{ch}, "until": 5, "before_id": "abc"}, "top_level: before_id must be a 64-hex event id"},
	} {
		resp := post(t, r, bob, "/query", []any{tc.filter})
		if resp.status != 400 || resp.errorText(t) != tc.err {
			t.Errorf("%v: %d %s", tc.filter, resp.status, resp.body)
		}
	}
}

// sortEvents orders newest first, ties by id ascending (NIP-CW).
func sortEvents(es []*nostr.Event) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0; j-- {
			a, b := es[j-1], es[j]
			if a.CreatedAt < b.CreatedAt || a.CreatedAt == b.CreatedAt && a.ID > b.ID {
				es[j-1], es[j] = b, a
			}
		}
	}
}

// §3.6: thread window with 39007 bounds.
func TestThreadWindow(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	root := ev(t, alice, 9, "root", []string{"h", ch})
	c.mustPublish(root)
	base := time.Now().Add(-30 * time.Second)
	for i := 0; i < 3; i++ {
		c.mustPublish(evAt(t, alice, 9, base.Add(time.Duration(i)*time.Second), fmt.Sprint("r", i), []string{"h", ch}, []string{"e", root.ID, "", "reply"}))
	}
	f := map[string]any{"thread_window": true, "#h": []string{ch}, "#e": []string{root.ID}, "kinds": []int{9}, "limit": 2, "depth_limit": 100, "include_aux": true}
	got := queryEvents(t, r, alice, f)
	var rows, bounds []*nostr.Event
	for _, e := range got {
		if e.Kind == 39007 {
			bounds = append(bounds, e)
		} else {
			rows = append(rows, e)
		}
	}
	if len(rows) != 2 || len(bounds) != 1 || rows[0].Content != "r2" {
		t.Fatalf("thread window: rows %d bounds %d", len(rows), len(bounds))
	}
	b := bounds[0]
	var bc boundsContent
	json.Unmarshal([]byte(b.Content), &bc)
	if !strings.HasPrefix(b.TagValue("d"), "tw:1:") || len(b.TagValue("d")) != 69 || b.TagValue("e") != root.ID ||
		!bc.HasMore || bc.NextCursor.ID != rows[1].ID || b.Verify() != nil || b.PubKey != r.RelayPubKey() {
		t.Fatalf("39007 %+v", b)
	}
	resp := post(t, r, alice, "/query", []any{f, map[string]any{"kinds": []int{9}}})
	if resp.status != 400 {
		t.Errorf("thread window mixed with a plain filter: %d", resp.status)
	}
}

// §3.4, §4.7: presence is WS-only, in memory, synthesised by /query, and
// offline once the last connection closes.
func TestPresenceSynthesis(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	a.mustPublish(ev(t, alice, 20001, "away"))
	status := func() string {
		got := queryEvents(t, r, bob, map[string]any{"kinds": []int{20001}, "authors": []string{alice.PubKey()}})
		if len(got) != 1 || got[0].PubKey != r.RelayPubKey() || got[0].TagValue("p") != alice.PubKey() || got[0].Verify() != nil {
			t.Fatalf("synthetic presence: %+v", got)
		}
		return got[0].Content
	}
	if s := status(); s != "away" {
		t.Fatalf("status %q, want away", s)
	}
	a.close()
	waitfor.Until(t, "offline after the last connection closed", 3*time.Second, func() bool { return status() == "offline" })
}

// TagValueOr is a test helper on nostr.Event via a wrapper function.
