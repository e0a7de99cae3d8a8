package relayclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// fakeHTTP is a bridge-like server on 127.0.0.1 that verifies NIP-98 the way
// Buzz does (u = scheme + Host + path[?query]) before calling route.
type fakeHTTP struct {
	srv     *httptest.Server
	scheme  string // what the relay thinks its public scheme is
	origin  string // operator origin ("" = none)
	route   func(w http.ResponseWriter, r *http.Request, body []byte)
	mu      sync.Mutex
	seen    []*http.Request
	authErr []string
}

func newFakeHTTP(t *testing.T, scheme string, route func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeHTTP {
	fh := &fakeHTTP{scheme: scheme, route: route}
	fh.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fh.mu.Lock()
		fh.seen = append(fh.seen, r)
		fh.mu.Unlock()
		if r.Header.Get("Authorization") != "" {
			u := fh.scheme + "://" + r.Host + r.URL.EscapedPath()
			fh.mu.Lock()
			origin := fh.origin
			fh.mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/operator/") && origin != "" {
				u = origin + r.URL.EscapedPath()
			}
			if r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			ev, err := nostr.ParseHTTPAuth(r.Header.Get("Authorization"))
			if err == nil {
				err = nostr.VerifyHTTPAuth(ev, nostr.HTTPCheck{Method: r.Method, URL: u, Body: body,
					RequirePayload: true, Now: time.Now(), MaxSkew: time.Minute})
			}
			if err != nil {
				fh.mu.Lock()
				fh.authErr = append(fh.authErr, err.Error())
				fh.mu.Unlock()
				w.WriteHeader(401)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
				return
			}
		}
		fh.route(w, r, body)
	}))
	t.Cleanup(fh.srv.Close)
	return fh
}

func (fh *fakeHTTP) request(i int) *http.Request {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	return fh.seen[i]
}

func (fh *fakeHTTP) authErrors() []string {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	return append([]string(nil), fh.authErr...)
}

func (fh *fakeHTTP) addr() string { return strings.TrimPrefix(fh.srv.URL, "http://") }

func newHTTPClient(t *testing.T, cfg HTTPConfig) *HTTP {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = testKeys(t, 1)
	}
	h, err := NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHTTPQuerySignsThePublicURLAndMapsConnectAddr(t *testing.T) {
	ev := sampleEvent(t)
	var mu sync.Mutex
	var gotBody string
	fh := newFakeHTTP(t, "https", func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		gotBody = string(body)
		mu.Unlock()
		_, _ = w.Write([]byte("[" + string(ev.AppendJSON(nil)) + "]"))
	})
	sink := &CollectSink{}
	tag := []string{"auth", strings.Repeat("1", 64), "", strings.Repeat("2", 128)}
	h := newHTTPClient(t, HTTPConfig{
		Target: Target{HTTPURL: "https://relay.example.org", Host: "c7.buzz.test", ConnectAddr: fh.addr()},
		OATag:  tag, Sink: sink,
	})
	evs, r := h.Query(context.Background(), []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {"c"}}, Limit: 50}}, CallOptions{})
	if r.Outcome != OutcomeOK || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("%+v %d (auth errors %v)", r, len(evs), fh.authErrors())
	}
	if r.Op != OpHTTPQuery || r.BytesSent == 0 || r.BytesReceived == 0 || sink.Count(OpHTTPQuery, OutcomeOK) != 1 {
		t.Fatalf("%+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotBody != `[{"kinds":[9],"#h":["c"],"limit":50}]` {
		t.Fatalf("body %s", gotBody)
	}
	req := fh.request(0)
	if req.Host != "c7.buzz.test" || req.Method != "POST" || req.URL.Path != "/query" {
		t.Fatalf("request %s %s Host %s", req.Method, req.URL, req.Host)
	}
	var sentTag []string
	if err := json.Unmarshal([]byte(req.Header.Get("x-auth-tag")), &sentTag); err != nil || len(sentTag) != 4 || sentTag[1] != tag[1] {
		t.Fatalf("x-auth-tag %q", req.Header.Get("x-auth-tag"))
	}
	if got := h.PublicURL("/query", ""); got != "https://c7.buzz.test/query" {
		t.Fatalf("PublicURL %s", got)
	}
}

func TestHTTPStatusClassification(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		want       Outcome
		retry      time.Duration
		errMust    string
		emptyEvent bool
	}{
		{"429 with Retry-After", 429, map[string]string{"Retry-After": "9"}, `{"error":"rate-limited: quota exceeded; retry in 12s"}`, OutcomeThrottled, 9 * time.Second, "HTTP 429: rate-limited: quota exceeded", false},
		{"429 retry from body", 429, nil, `{"error":"rate-limited: quota exceeded; retry in 12s"}`, OutcomeThrottled, 12 * time.Second, "429", false},
		{"429 buzz v1", 429, map[string]string{"Retry-After": "60"}, `{"error":{"code":"rate_limited","request_id":"r1"}}`, OutcomeThrottled, 60 * time.Second, "rate_limited", false},
		{"503 admission unavailable", 503, nil, `{"error":"rate-limited: shared admission unavailable"}`, OutcomeThrottled, 0, "HTTP 503: rate-limited: shared admission unavailable", false},
		{"401 replay", 401, nil, `{"error":"NIP-98: replay detected"}`, OutcomeError, 0, "HTTP 401: NIP-98: replay detected", false},
		{"403 membership", 403, nil, `{"error":"relay_membership_required","message":"You must be a relay member to access this relay"}`, OutcomeError, 0, "relay_membership_required: You must be a relay member", false},
		{"404 plain text", 404, nil, `relay: no community is configured for this host`, OutcomeError, 0, `"relay: no community is configured for this host"`, false},
		{"500 empty", 500, nil, ``, OutcomeError, 0, "(empty body)", false},
		{"200 html", 200, nil, `<html><body>gateway</body></html>`, OutcomeError, 0, `"<html><body>gateway`, false},
		{"200 object not array", 200, nil, `{"events":[]}`, OutcomeError, 0, `{\"events\":[]}`, false},
		{"200 truncated", 200, nil, `[{"id":"ab`, OutcomeError, 0, "truncated", false},
		{"200 empty array", 200, nil, `[]`, OutcomeOK, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
			evs, r := h.Query(context.Background(), []Filter{{Kinds: []int{9}}}, CallOptions{})
			if r.Outcome != tc.want || r.RetryAfter != tc.retry {
				t.Fatalf("%+v (auth errors %v)", r, fh.authErrors())
			}
			if !strings.Contains(r.Error, tc.errMust) {
				t.Fatalf("error %q lacks %q", r.Error, tc.errMust)
			}
			if tc.emptyEvent && (evs == nil || len(evs) != 0) {
				t.Fatalf("events %v", evs)
			}
		})
	}
}

func TestHTTPTimeoutIsAnError(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
	_, r := h.Query(context.Background(), nil, CallOptions{Timeout: 80 * time.Millisecond})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "no response within") {
		t.Fatalf("%+v", r)
	}
	<-arrived // the timed-out request's
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }() // cancelled once the server has it
	_, r = h.Query(ctx, nil, CallOptions{})
	if r.Outcome != OutcomePending {
		t.Fatalf("cancelled: %+v", r)
	}
}

func TestHTTPEventsAndCount(t *testing.T) {
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch r.URL.Path {
		case "/events":
			ev, err := nostr.ParseEvent(body)
			if err != nil {
				w.WriteHeader(400)
				return
			}
			switch ev.Content {
			case "dup":
				_, _ = w.Write([]byte(`{"event_id":"` + ev.ID + `","accepted":true,"message":"duplicate:"}`))
			case "reject":
				w.WriteHeader(400)
				_, _ = w.Write([]byte(`{"error":"invalid: channel-scoped events must include an h tag"}`))
			case "quota":
				w.WriteHeader(400)
				_, _ = w.Write([]byte(`{"error":"rate-limited: quota exceeded; retry in 4s"}`))
			case "soft-reject":
				_, _ = w.Write([]byte(`{"event_id":"` + ev.ID + `","accepted":false,"message":"restricted: not a channel member"}`))
			default:
				_, _ = w.Write([]byte(`{"event_id":"` + ev.ID + `","accepted":true,"message":""}`))
			}
		case "/count":
			_, _ = w.Write([]byte(`{"count":17}`))
		}
	})
	sink := &CollectSink{}
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Sink: sink})
	k := testKeys(t, 1)
	for content, want := range map[string]Outcome{
		"ok": OutcomeOK, "dup": OutcomeOK, "reject": OutcomeError, "quota": OutcomeThrottled, "soft-reject": OutcomeError,
	} {
		rep, r := h.PublishHTTP(context.Background(), signed(t, k, content), CallOptions{Op: "hot_reply"})
		if r.Outcome != want || r.Op != "hot_reply" {
			t.Errorf("%s: %+v %+v (auth errors %v)", content, r, rep, fh.authErrors())
		}
		if want == OutcomeThrottled && r.RetryAfter != 4*time.Second {
			t.Errorf("%s: retry %v", content, r.RetryAfter)
		}
		if content == "soft-reject" && !strings.Contains(r.Error, "not a channel member") {
			t.Errorf("soft reject error %q", r.Error)
		}
	}
	if n := len(sink.Op("hot_reply")); n != 5 {
		t.Fatalf("%d recorded", n)
	}
	n, r := h.CountHTTP(context.Background(), []Filter{{Kinds: []int{9}}}, CallOptions{})
	if n != 17 || r.Outcome != OutcomeOK || r.Op != OpHTTPCount {
		t.Fatalf("%d %+v", n, r)
	}
}

func TestHTTPNIP98IsRejectedWhenTheURLIsWrong(t *testing.T) {
	// The relay believes it is https://; a client that claims http:// fails
	// NIP-98 with the relay's 401 text. This checks the fake verifies at all.
	fh := newFakeHTTP(t, "https", func(w http.ResponseWriter, r *http.Request, body []byte) {
		_, _ = w.Write([]byte(`[]`))
	})
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
	_, r := h.Query(context.Background(), nil, CallOptions{})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "HTTP 401: NIP-98: url mismatch") {
		t.Fatalf("%+v", r)
	}
	if strings.Contains(r.Error, "Nostr ") {
		t.Fatal("error leaks the Authorization header")
	}
}

func TestOperatorCallsSignTheOperatorOrigin(t *testing.T) {
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch r.URL.Path {
		case "/operator/communities":
			if r.Method == "GET" {
				_, _ = w.Write([]byte(`{"owner_pubkey":"o","communities":[{"community_id":"u1","host":"c1.test","created_at":"2026-01-01T00:00:00Z","archived_at":null}],"quota_used":1,"quota_limit":5,"can_create":true}`))
				return
			}
			var in map[string]any
			_ = json.Unmarshal(body, &in)
			if in["create_only"] != true {
				w.WriteHeader(400)
				return
			}
			if in["host"] == "taken.test" {
				w.WriteHeader(409)
				_, _ = w.Write([]byte(`{"error":"community already exists"}`))
				return
			}
			if in["host"] == "weird.test" {
				_, _ = w.Write([]byte(`{"status":"created"}`))
				return
			}
			_, _ = w.Write([]byte(`{"community_id":"u1","host":"c1.test","status":"created","owner_pubkey":"o"}`))
		case "/operator/communities/delete":
			w.WriteHeader(202)
			_, _ = w.Write([]byte(`{"request_id":"r","community_id":"u1","host":"c1.test","acknowledgement_version":1,"status":"submitted"}`))
		case "/operator/communities/archive":
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"community_id":"u1","host":"c1.test","archived_at":1,"status":"archived","propagation":"pending","error":"retry"}`))
		case "/operator/communities/availability":
			if r.URL.Query().Get("host") != "c9.test" {
				w.WriteHeader(400)
				return
			}
			_, _ = w.Write([]byte(`{"host":"c9.test","normalized_host":"c9.test","available":true,"community_id":null}`))
		}
	})
	fh.mu.Lock()
	fh.origin = "https://ops.example.org"
	fh.mu.Unlock()
	sink := &CollectSink{}
	h := newHTTPClient(t, HTTPConfig{
		Target:         Target{HTTPURL: "https://relay.example.org", Host: "c1.test", ConnectAddr: fh.addr()},
		OperatorOrigin: "https://ops.example.org",
		Keys:           nostr.DeriveKeys("relay-test", nostr.RoleOperator, 0),
		Sink:           sink,
	})
	ctx := context.Background()
	rep, r := h.ProvisionCommunity(ctx, "c1.test", "o", true, CallOptions{})
	if r.Outcome != OutcomeOK || rep.CommunityID != "u1" || rep.Status != "created" {
		t.Fatalf("%+v %+v (auth errors %v)", rep, r, fh.authErrors())
	}
	if fh.request(0).Host != "ops.example.org" {
		t.Fatalf("operator Host %q", fh.request(0).Host)
	}
	if _, r := h.ProvisionCommunity(ctx, "taken.test", "o", true, CallOptions{}); r.Outcome != OutcomeError || !strings.Contains(r.Error, "HTTP 409: community already exists") {
		t.Fatalf("%+v", r)
	}
	if _, r := h.ProvisionCommunity(ctx, "weird.test", "o", true, CallOptions{}); r.Outcome != OutcomeError || !strings.Contains(r.Error, "community_id") {
		t.Fatalf("missing field accepted: %+v", r)
	}
	if sink.Count(OpProvisionCommunity, OutcomeError) != 2 {
		t.Fatalf("the sink must see the shape error too: %+v", sink.Op(OpProvisionCommunity))
	}
	list, r := h.ListCommunities(ctx, "o", CallOptions{})
	if r.Outcome != OutcomeOK || len(list.Communities) != 1 || list.QuotaLimit == nil || *list.QuotaLimit != 5 {
		t.Fatalf("%+v %+v", list, r)
	}
	del, r := h.DeleteCommunity(ctx, DeletionRequest{Host: "c1.test", OwnerPubkey: "o", RequestID: "r", AcknowledgementVersion: 1}, CallOptions{})
	if r.Outcome != OutcomeOK || del.Status != "submitted" {
		t.Fatalf("%+v %+v", del, r)
	}
	arch, r := h.ArchiveCommunity(ctx, "c1.test", "o", CallOptions{})
	if r.Outcome != OutcomeError || arch.Propagation != "pending" {
		t.Fatalf("%+v %+v", arch, r)
	}
	av, r := h.CommunityAvailability(ctx, "c9.test", CallOptions{})
	if r.Outcome != OutcomeOK || !av.Available || av.CommunityID != nil {
		t.Fatalf("%+v %+v", av, r)
	}
	if len(fh.authErrors()) != 0 {
		t.Fatalf("NIP-98 failures: %v", fh.authErrors())
	}
}

func TestNIP11IsUnsignedWithTheNostrAccept(t *testing.T) {
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Header.Get("Accept") != "application/nostr+json" || r.Header.Get("Authorization") != "" {
			w.WriteHeader(400)
			return
		}
		_, _ = w.Write([]byte(`{"name":"buzz","buzz_v1":{"version":1,"base_path":"/buzz/v1"}}`))
	})
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
	var doc struct {
		Name   string `json:"name"`
		BuzzV1 *struct {
			BasePath string `json:"base_path"`
		} `json:"buzz_v1"`
	}
	r := h.NIP11(context.Background(), "desktop_nip11", &doc)
	if r.Outcome != OutcomeOK || r.Op != "desktop_nip11" || doc.BuzzV1 == nil || doc.BuzzV1.BasePath != "/buzz/v1" {
		t.Fatalf("%+v %+v", r, doc)
	}
}

func TestBuzzV1Sidebar(t *testing.T) {
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.RawQuery != "limit=20" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_request","request_id":"x"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"account":{"cutoff_ms":1},"channels":[{"channel_id":"c"}],"next_cursor":null}`))
	})
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
	sb, r := h.Sidebar(context.Background(), "limit=20", CallOptions{Op: "desktop_sidebar"})
	if r.Outcome != OutcomeOK || len(sb.Channels) != 1 || sb.NextCursor != nil {
		t.Fatalf("%+v %+v (auth %v)", sb, r, fh.authErrors())
	}
	_, r = h.Sidebar(context.Background(), "limit=999", CallOptions{})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "HTTP 400: invalid_request") {
		t.Fatalf("%+v", r)
	}
}

func TestHTTPBodyLimitAndNoSecretsInErrors(t *testing.T) {
	fh := newFakeHTTP(t, "https", func(w http.ResponseWriter, r *http.Request, body []byte) {
		_, _ = w.Write([]byte("[" + strings.Repeat(" ", 4096) + "]"))
	})
	sink := &CollectSink{}
	k := testKeys(t, 1)
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Keys: k, Sink: sink, MaxBodyBytes: 1024})
	// https expected by the relay, http claimed: a 401 whose text we quote.
	_, r := h.Query(context.Background(), nil, CallOptions{})
	if r.Outcome != OutcomeError {
		t.Fatalf("%+v", r)
	}
	h2 := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Keys: k, Sink: sink, MaxBodyBytes: 1024})
	_, r = h2.Do(context.Background(), Request{Op: "raw", Path: "/x", Unsigned: true})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "larger than 1024 bytes") {
		t.Fatalf("%+v", r)
	}
	for _, res := range sink.Results() {
		if strings.Contains(res.Error, k.SecretHex()) || strings.Contains(res.Error, "Nostr ") {
			t.Fatalf("secret or auth header in %q", res.Error)
		}
	}
}

func TestQueryObjectForSnapshotReads(t *testing.T) {
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		if strings.Contains(string(body), `"read_state_snapshot":1`) {
			_, _ = w.Write([]byte(`{"read_state_snapshot":1,"complete":true,"pubkey":"V","events":[]}`))
			return
		}
		_, _ = w.Write([]byte(`[]`))
	})
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}})
	var snap struct {
		Complete bool   `json:"complete"`
		Pubkey   string `json:"pubkey"`
	}
	f := []Filter{{Kinds: []int{30078}, Authors: []string{"V"}, Extra: map[string]any{"read_state_snapshot": 1}}}
	if _, r := h.QueryObject(context.Background(), f, &snap, CallOptions{Op: "desktop_read_state"}); r.Outcome != OutcomeOK || !snap.Complete || snap.Pubkey != "V" {
		t.Fatalf("%+v %+v", r, snap)
	}
	// An array where an object is expected is a shape error quoting the body.
	if _, r := h.QueryObject(context.Background(), []Filter{{Kinds: []int{1}}}, &snap, CallOptions{}); r.Outcome != OutcomeError || !strings.Contains(r.Error, `"[]"`) {
		t.Fatalf("%+v", r)
	}
}

// A body that stops coming is an error when the request's timeout ends it,
// but when the caller gives up (a stop) mid-body the request is abandoned
// (pending), not "body not complete within". Mutant "every context end
// during the body is the timeout" fails the second case.
func TestHTTPBodyCutShortByTimeoutIsAnErrorAndByTheCallerIsAbandoned(t *testing.T) {
	release := make(chan struct{})
	midBody := make(chan struct{}, 4)
	fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`[{"id":`))
		w.(http.Flusher).Flush()
		midBody <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	headers := make(chan struct{}, 4)
	pool, err := NewTransport(TransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := headersSeen{rt: pool, seen: headers}
	h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Transport: tr})
	_, r := h.Query(context.Background(), nil, CallOptions{Timeout: 150 * time.Millisecond})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "body not complete within") {
		t.Errorf("timeout mid-body: %+v", r)
	}
	<-midBody // the timed-out request's
	<-headers
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the client has the headers and the server has sent
	// part of the body: the client is reading the body.
	go func() { <-midBody; <-headers; cancel() }()
	_, r = h.Query(ctx, nil, CallOptions{Timeout: 5 * time.Second})
	if r.Outcome != OutcomePending || !strings.Contains(r.Error, "cancelled while reading the body") {
		t.Errorf("cancelled mid-body: %+v", r)
	}
}

// headersSeen signals each response whose headers arrived.
type headersSeen struct {
	rt   http.RoundTripper
	seen chan struct{}
}

func (h headersSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err == nil {
		h.seen <- struct{}{}
	}
	return resp, err
}
