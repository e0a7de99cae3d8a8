package relay

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// httpCaller is who an authenticated HTTP request speaks for.
type httpCaller struct {
	pubkey  string
	agent   bool
	oaOwner string // the owner a verified x-auth-tag names
	authID  string // the NIP-98 event id ("" for the dev fallback)
}

// publicHTTPBase is scheme://host as the client addressed the request:
// Buzz builds the expected NIP-98 u from the normalised request Host.
func (r *Relay) publicHTTPBase(req *http.Request) string {
	if r.cfg.PublicScheme == "wss" {
		return "https://" + nostr.NormalizeHost(req.Host)
	}
	return "http://" + nostr.NormalizeHost(req.Host)
}

// readBody reads at most MaxBodyBytes.
func (r *Relay) readBody(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, "request body too large (limit "+strconv.FormatInt(r.cfg.MaxBodyBytes, 10)+" bytes)")
		} else {
			writeJSONError(w, http.StatusBadRequest, "could not read request body")
		}
		return nil, false
	}
	return body, true
}

// authHTTP applies NIP-98 (docs/buzz-protocol.md §3.2). requirePayload is true on
// /buzz/v1 POSTs; allowDev permits the X-Pubkey fallback when configured.
// It writes the 401 itself and returns ok=false on failure.
func (r *Relay) authHTTP(w http.ResponseWriter, req *http.Request, c *community, body []byte, requirePayload, allowDev bool) (httpCaller, bool) {
	h := req.Header.Get("Authorization")
	if h == "" && allowDev && r.cfg.AllowDevPubkey {
		pk := strings.ToLower(strings.TrimSpace(req.Header.Get("X-Pubkey")))
		if _, err := nostr.ParsePubKey(pk); err == nil {
			return httpCaller{pubkey: pk}, true
		}
	}
	ev, err := nostr.ParseHTTPAuth(h)
	if err != nil {
		r.stats.httpAuthFailed.Add(1)
		writeJSONError(w, http.StatusUnauthorized, err.Error())
		return httpCaller{}, false
	}
	u := r.publicHTTPBase(req) + req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		u += "?" + req.URL.RawQuery
	}
	if err := nostr.VerifyHTTPAuth(ev, nostr.HTTPCheck{
		Method: req.Method, URL: u, Body: body, RequirePayload: requirePayload,
		Now: time.Now(), MaxSkew: r.cfg.AuthSkew,
	}); err != nil {
		r.stats.httpAuthFailed.Add(1)
		r.logf(" WARN relay: %s %s: NIP-98 refused for %s: %v (expected u %s)", req.Method, req.URL.Path, trimDetail(ev.PubKey), err, u)
		writeJSONError(w, http.StatusUnauthorized, err.Error())
		return httpCaller{}, false
	}
	caller := httpCaller{pubkey: ev.PubKey, authID: ev.ID}
	if v := req.Header.Get(nostr.OAHeader); v != "" {
		tag, err := nostr.ParseOATagHeader(v)
		if err == nil {
			caller.oaOwner, err = verifyOATag(tag, ev.PubKey, 0, ev.CreatedAt)
		}
		if err != nil {
			writeJSONError(w, http.StatusUnauthorized, "NIP-98: invalid x-auth-tag")
			return httpCaller{}, false
		}
		caller.agent = true
	}
	return caller, true
}

// serveBridge handles POST /events, /query and /count. Check order
// (docs/buzz-protocol.md §3.2): host → auth → admission (429) → replay → JSON parse → route.
func (r *Relay) serveBridge(w http.ResponseWriter, req *http.Request, c *community) {
	if d := r.faults.latency(); d > 0 {
		r.faults.held.Add(1)
		time.Sleep(d)
	}
	if st := r.faults.takeHTTPFailure(req.URL.Path); st != 0 {
		if st >= 500 {
			// As a server logs its own failures: the run's log scan sees it.
			r.logf("ERROR relay: %s %s: injected failure, HTTP %d", req.Method, req.URL.Path, st)
		}
		writeJSONError(w, st, "fault injected")
		return
	}
	r.stats.httpRequests.Add(1)
	if req.Method != http.MethodPost {
		writeJSONError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	caller, ok := r.authHTTP(w, req, c, body, false, true)
	if !ok {
		return
	}
	if g, ok := req.Context().Value(fiGrantKey{}).(fiGrant); ok && g.pubkey != caller.pubkey {
		fiDeny(w, false) // the assertion names another key than the NIP-98 signer
		return
	}
	if !c.admitted(caller.pubkey, caller.oaOwner) {
		writeMembershipRequired(w)
		return
	}
	if reason := c.limits.api(caller.pubkey, time.Now()); reason != "" {
		r.countThrottle(false)
		writeJSONError(w, http.StatusTooManyRequests, reason)
		return
	}
	if caller.authID != "" && c.replay.check(caller.authID, time.Now()) {
		writeJSONError(w, http.StatusUnauthorized, "NIP-98: replay detected")
		return
	}
	switch req.URL.Path {
	case "/events":
		r.httpEvents(w, c, caller, body)
	case "/query":
		r.httpQuery(w, c, caller, body)
	case "/count":
		r.httpCount(w, c, caller, body)
	}
}

func (r *Relay) httpEvents(w http.ResponseWriter, c *community, caller httpCaller, body []byte) {
	ev, err := nostr.ParseEvent(body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid: body is not an event JSON object")
		return
	}
	res := r.ingest(c, ev, ingestAuth{pubkey: caller.pubkey, agentOwner: boolOwner(caller.agent), ws: false})
	if res.accepted || res.status == http.StatusOK {
		writeJSON(w, http.StatusOK, map[string]any{"event_id": ev.ID, "accepted": res.accepted, "message": res.message})
		return
	}
	writeJSONError(w, res.status, res.message)
}

// boolOwner marks an agent caller for the tier choice (the owner itself
// does not matter for HTTP publishing).
func boolOwner(agent bool) string {
	if agent {
		return "agent"
	}
	return ""
}

// restrictedStatus maps a read refusal to 403 (restricted:) or 400.
func restrictedStatus(reason string) int {
	if strings.HasPrefix(reason, "restricted:") {
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

func (r *Relay) httpCount(w http.ResponseWriter, c *community, caller httpCaller, body []byte) {
	filters, err := store.ParseFilters(body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(filters) == 0 || len(filters) > r.cfg.MaxFilters {
		writeJSONError(w, http.StatusBadRequest, "invalid: between 1 and "+strconv.Itoa(r.cfg.MaxFilters)+" filters are required")
		return
	}
	if reason := c.checkReadAccess(filters, caller.pubkey, accessCOUNT, 0); reason != "" {
		writeJSONError(w, restrictedStatus(reason), reason)
		return
	}
	n, reason := c.count(filters, caller.pubkey)
	if reason != "" {
		writeJSONError(w, restrictedStatus(reason), reason)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"count": n})
}

// httpQuery answers POST /query: presence synthesis and the read-state
// snapshot here, every stored-data mode (plain, cursors, search, channel
// and thread windows) in the store.
func (r *Relay) httpQuery(w http.ResponseWriter, c *community, caller httpCaller, body []byte) {
	filters, err := store.ParseFilters(body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(filters) == 0 || len(filters) > r.cfg.MaxFilters {
		writeJSONError(w, http.StatusBadRequest, "invalid: between 1 and "+strconv.Itoa(r.cfg.MaxFilters)+" filters are required")
		return
	}
	if reason := c.checkReadAccess(filters, caller.pubkey, accessHTTP, 0); reason != "" {
		writeJSONError(w, restrictedStatus(reason), reason)
		return
	}
	snapshot := 0
	for i := range filters {
		if !r.cfg.ReadStateSnapshot {
			filters[i].ReadStateSnapshot = nil // an unknown field: ignored
		}
		if filters[i].ReadStateSnapshot != nil && *filters[i].ReadStateSnapshot != 0 {
			snapshot++
		}
	}
	switch {
	case snapshot > 0:
		if len(filters) != 1 {
			writeJSONError(w, http.StatusBadRequest, "read_state_snapshot cannot be combined with other filters")
			return
		}
		writeJSON(w, http.StatusOK, r.readStateSnapshot(c, caller.pubkey))
		return
	case isPresenceQuery(filters):
		writeRaw(w, r.synthesizePresence(c, filters))
		return
	}
	// Read routing (docs/buzz-names.md §a, block/buzz bridge.rs
	// resolve_read_route): "strong" on any filter reads the writer; any
	// other consistency value fails the request, except on a filter whose
	// one #h the caller cannot read, which is skipped before the check.
	strong := false
	kept := filters[:0]
	for _, f := range filters {
		switch f.Consistency {
		case store.ConsistencyStrong:
			strong = true
		case store.ConsistencyMalformed:
			if h := f.Tags["h"]; len(h) == 1 && !c.canRead(h[0], caller.pubkey) {
				continue
			}
			writeJSONError(w, http.StatusBadRequest, `consistency must be "strong" when present`)
			return
		}
		kept = append(kept, f)
	}
	filters = kept
	if len(filters) == 0 {
		writeRaw(w, []byte("[]"))
		return
	}
	evs, err := c.store().BridgeQuery(filters, c.reader(caller.pubkey))
	if b := r.cfg.ReplicaReadMaxAgeMs; b > 0 && !strong && err == nil {
		evs = r.replicaView(c, evs, time.Duration(b)*time.Millisecond)
	}
	if err != nil {
		var re *store.RequestError
		if errors.As(err, &re) {
			writeJSONError(w, http.StatusBadRequest, re.Msg)
			return
		}
		r.logf("ERROR relay: %s /query: %v", c.host, err)
		writeJSONError(w, http.StatusInternalServerError, "error: internal server error")
		return
	}
	writeRaw(w, appendEvents(make([]byte, 0, 512*len(evs)+2), evs))
}

func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// isPresenceQuery: every filter is kinds [20001] (or [40902]) with authors.
func isPresenceQuery(filters []store.Filter) bool {
	for i := range filters {
		f := &filters[i]
		if len(f.Kinds) != 1 || (f.Kinds[0] != nostr.KindPresence && f.Kinds[0] != nostr.KindPresenceSnapshot) || len(f.Authors) == 0 {
			return false
		}
	}
	return true
}

// synthesizePresence answers a presence read with relay-signed 20001
// events: content = the subject's status, p = the subject (docs/buzz-protocol.md §3.4).
func (r *Relay) synthesizePresence(c *community, filters []store.Filter) []byte {
	seen := map[string]bool{}
	var subjects []string
	for i := range filters {
		for _, a := range filters[i].Authors {
			if !seen[a] && len(subjects) < 1000 {
				seen[a] = true
				subjects = append(subjects, a)
			}
		}
	}
	statuses := make([]string, len(subjects))
	for i, pk := range subjects {
		statuses[i] = c.presenceOf(pk)
	}
	out := []byte{'['}
	for i, pk := range subjects {
		e := r.signRelay(nostr.KindPresence, [][]string{{"p", pk}}, statuses[i], timeZero)
		if e == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = e.AppendJSON(out)
	}
	return append(out, ']')
}

// replicaView drops what a replica b behind would not have yet: events
// stored within the last b.
func (r *Relay) replicaView(c *community, evs []*nostr.Event, b time.Duration) []*nostr.Event {
	cut := time.Now().Add(-b).UnixNano()
	st := c.store()
	out := evs[:0]
	for _, ev := range evs {
		if in, ok := st.Lookup(ev.ID); ok && in.StoredAt > cut {
			continue
		}
		out = append(out, ev)
	}
	return out
}
