package relay

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

func v1Get(t *testing.T, r *Relay, k *nostr.Keys, pathQuery string) httpResp {
	t.Helper()
	auth := nip98(t, k, "GET", r.URLs().HTTP+pathQuery, nil, false, time.Now())
	return doHTTP(t, r, "GET", "", pathQuery, nil, map[string]string{"Authorization": auth})
}

func v1Code(t *testing.T, resp httpResp) string {
	t.Helper()
	var m struct {
		Error struct {
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	resp.json(t, &m)
	if m.Error.RequestID == "" {
		t.Errorf("error without request_id: %s", resp.body)
	}
	return m.Error.Code
}

type sidebarRow struct {
	ChannelID string `json:"channel_id"`
	Unread    struct {
		Status string `json:"status"`
		Value  int    `json:"value"`
	} `json:"unread"`
	Attention struct {
		Value int `json:"value"`
	} `json:"attention"`
	LatestID string `json:"latest_message_id"`
	Threads  struct {
		Items []struct {
			Root   string `json:"root_id"`
			Unread struct {
				Value int `json:"value"`
			} `json:"unread"`
		} `json:"items"`
		Complete bool `json:"complete"`
	} `json:"threads"`
}

// §3.10: sidebar counts and read state.
func TestBuzzV1SidebarAndReadState(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.BuzzV1 = true })
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("general", "open")
	b := authed(t, r, bob)
	b.mustPublish(ev(t, bob, 9021, "", []string{"h", ch}))
	base := time.Now().Add(-time.Minute)
	var last *nostr.Event
	for i := 0; i < 3; i++ {
		tags := [][]string{{"h", ch}}
		if i == 1 {
			tags = append(tags, []string{"p", bob.PubKey()})
		}
		last = evAt(t, alice, 9, base.Add(time.Duration(i)*time.Second), "m", tags...)
		a.mustPublish(last)
	}
	root := evAt(t, bob, 9, base.Add(5*time.Second), "bob's root", []string{"h", ch})
	b.mustPublish(root)
	reply := evAt(t, alice, 9, base.Add(6*time.Second), "reply", []string{"h", ch}, []string{"e", root.ID, "", "reply"})
	a.mustPublish(reply)

	sidebar := func() sidebarRow {
		resp := v1Get(t, r, bob, "/buzz/v1/me/sidebar?limit=20")
		if resp.status != 200 {
			t.Fatalf("sidebar: %d %s", resp.status, resp.body)
		}
		var out struct {
			Account  map[string]any `json:"account"`
			Channels []sidebarRow   `json:"channels"`
		}
		resp.json(t, &out)
		if len(out.Channels) != 1 || out.Channels[0].ChannelID != ch || out.Account["cutoff_ms"] == nil {
			t.Fatalf("sidebar %s", resp.body)
		}
		return out.Channels[0]
	}
	row := sidebar()
	if row.Unread.Status != "exact" || row.Unread.Value != 3 || row.Attention.Value != 1 || row.LatestID != root.ID {
		t.Fatalf("row %+v", row)
	}
	if len(row.Threads.Items) != 1 || row.Threads.Items[0].Root != root.ID || row.Threads.Items[0].Unread.Value != 1 {
		t.Fatalf("threads %+v", row.Threads)
	}

	body, _ := json.Marshal(map[string]any{"intents": []any{
		map[string]any{"type": "mark_through", "target": map[string]any{"channel_id": ch}, "message_id": last.ID},
		map[string]any{"type": "mark_through", "target": map[string]any{"channel_id": ch, "root_id": root.ID}, "message_id": reply.ID},
		map[string]any{"type": "mark_through", "target": map[string]any{"channel_id": ch}, "message_id": "00"},
	}})
	resp := post(t, r, bob, "/buzz/v1/me/read-state", body)
	var w struct {
		Outcomes []struct{ Status string } `json:"outcomes"`
	}
	resp.json(t, &w)
	if resp.status != 200 || len(w.Outcomes) != 3 || w.Outcomes[0].Status != "applied" || w.Outcomes[1].Status != "applied" || w.Outcomes[2].Status != "invalid" {
		t.Fatalf("intents: %d %s", resp.status, resp.body)
	}
	if row := sidebar(); row.Unread.Value != 0 || row.Threads.Items[0].Unread.Value != 0 {
		t.Fatalf("after marking: %+v", row)
	}
	targets, _ := json.Marshal([]any{map[string]any{"target": map[string]any{"channel_id": ch}, "message_ids": []string{last.ID, root.ID}}})
	resp = v1Get(t, r, bob, "/buzz/v1/me/read-state?targets="+url.QueryEscape(string(targets)))
	var rc struct {
		Contexts []struct {
			Status   string                    `json:"status"`
			Messages []struct{ Status string } `json:"messages"`
		} `json:"contexts"`
	}
	resp.json(t, &rc)
	if resp.status != 200 || len(rc.Contexts) != 1 || rc.Contexts[0].Status != "available" ||
		rc.Contexts[0].Messages[0].Status != "read" || rc.Contexts[0].Messages[1].Status != "not_counted" {
		t.Fatalf("read contexts: %d %s", resp.status, resp.body)
	}

	// Errors: unknown field, X-Pubkey, missing payload.
	if resp := v1Get(t, r, bob, "/buzz/v1/me/sidebar?frob=1"); resp.status != 400 || v1Code(t, resp) != "invalid_request" {
		t.Errorf("unknown query field: %d %s", resp.status, resp.body)
	}
	if resp := doHTTP(t, r, "GET", "", "/buzz/v1/me/sidebar", nil, map[string]string{"X-Pubkey": bob.PubKey()}); resp.status != 401 || v1Code(t, resp) != "unauthorized" {
		t.Errorf("X-Pubkey: %d %s", resp.status, resp.body)
	}
	noPayload := nip98(t, bob, "POST", r.URLs().HTTP+"/buzz/v1/me/read-state", body, false, time.Now())
	if resp := doHTTP(t, r, "POST", "", "/buzz/v1/me/read-state", body, map[string]string{"Authorization": noPayload}); resp.status != 401 {
		t.Errorf("POST without payload tag: %d %s", resp.status, resp.body)
	}
	if resp := doHTTP(t, r, "GET", "", "/", nil, map[string]string{"Accept": "application/nostr+json"}); !json.Valid(resp.body) || !containsKey(t, resp, "buzz_v1") {
		t.Errorf("NIP-11 lacks buzz_v1: %s", resp.body)
	}
	off := startRelay(t, nil)
	if resp := v1Get(t, off, bob, "/buzz/v1/me/sidebar"); resp.status != 404 {
		t.Errorf("disabled /buzz/v1: %d", resp.status)
	}
}

func containsKey(t *testing.T, resp httpResp, k string) bool {
	var m map[string]any
	resp.json(t, &m)
	_, ok := m[k]
	return ok
}
