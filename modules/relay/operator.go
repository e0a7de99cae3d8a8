package relay

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Deletion stages in order (docs/buzz-protocol.md §3.9, from buzz-db deletion.rs). A request
// is accepted at "submitted" and then walks the stages on its own; the
// community's events are purged at postgres_purged. The host stays reserved
// (tombstoned) forever.
var deletionStages = []string{
	"submitted", "inventoried", "approved", "fenced", "drained", "bindings_removed",
	"postgres_purged", "cache_purged", "logically_verified", "retention_pending",
}

// deletionStageStep is how long each stage lasts in the local relay.
const deletionStageStep = 20 * time.Millisecond

type deletionRequest struct {
	requestID string
	host      string
	owner     string
	version   int
	stage     int // index into deletionStages
	deletedAt int64
}

type opError struct {
	status int
	msg    string
	code   string
}

func (e opError) write(w http.ResponseWriter) {
	body := map[string]string{"error": e.msg}
	if e.code != "" {
		body["code"] = e.code
	}
	writeJSON(w, e.status, body)
}

// serveOperator handles /operator/* (docs/buzz-protocol.md §3.9). The Host header is not
// used: NIP-98 u tags must name the configured operator origin.
func (r *Relay) serveOperator(w http.ResponseWriter, req *http.Request) {
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	ev, err := nostr.ParseHTTPAuth(req.Header.Get("Authorization"))
	if err != nil {
		writeJSONError(w, http.StatusUnauthorized, err.Error())
		return
	}
	u := r.opOrigin + req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		u += "?" + req.URL.RawQuery
	}
	if err := nostr.VerifyHTTPAuth(ev, nostr.HTTPCheck{
		Method: req.Method, URL: u, Body: body,
		RequirePayload: len(body) > 0 || req.Method == http.MethodPost || req.Method == http.MethodDelete,
		Now:            time.Now(), MaxSkew: r.cfg.AuthSkew,
	}); err != nil {
		writeJSONError(w, http.StatusUnauthorized, err.Error())
		return
	}
	if req.URL.Path == "/operator/listener/pubkeys" {
		// This relay configures no operator listeners.
		writeJSONError(w, http.StatusForbidden, "actor not authorized: not a configured operator listener")
		return
	}
	if !r.operators[ev.PubKey] {
		writeJSONError(w, http.StatusForbidden, "actor not authorized: not a relay operator")
		return
	}
	if r.opReplay.check(ev.ID, time.Now()) {
		writeJSONError(w, http.StatusUnauthorized, "NIP-98: replay detected")
		return
	}
	route := req.Method + " " + req.URL.Path
	switch route {
	case "POST /operator/communities":
		r.opProvision(w, body)
	case "GET /operator/communities":
		r.opList(w, req)
	case "GET /operator/communities/availability":
		r.opAvailability(w, req)
	case "POST /operator/communities/archive":
		r.opArchive(w, body, true)
	case "POST /operator/communities/unarchive":
		r.opArchive(w, body, false)
	case "POST /operator/communities/delete":
		r.opDelete(w, body)
	case "POST /operator/communities/transfer":
		r.opTransfer(w, body)
	case "POST /operator/drill":
		r.opDrill(w, body)
	default:
		writeJSONError(w, http.StatusNotFound, "not found")
	}
}

// validHost accepts host[:port] with DNS-ish characters, after normalisation.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

func validPubKey(pk string) bool {
	_, err := nostr.ParsePubKey(pk)
	return err == nil && isHexLen(pk, 64)
}

func (r *Relay) opProvision(w http.ResponseWriter, body []byte) {
	var in struct {
		Host       string `json:"host"`
		Owner      string `json:"initial_owner_pubkey"`
		CreateOnly bool   `json:"create_only"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid provision-community JSON: "+err.Error())
		return
	}
	// Buzz validates the raw host on create (provision_community →
	// validate_host): only read-only and delete routes normalise first.
	if err := nostr.ValidateCanonicalHost(in.Host); err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid host "+jsonString(in.Host)+": "+err.Error())
		return
	}
	host := in.Host
	if in.Owner != "" && !validPubKey(in.Owner) {
		writeJSONError(w, http.StatusBadRequest, "invalid initial_owner_pubkey")
		return
	}
	if in.CreateOnly && in.Owner == "" {
		writeJSONError(w, http.StatusBadRequest, "initial_owner_pubkey is required when create_only is true")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.comms[host]; ok {
		switch {
		case in.CreateOnly || c.deletion != nil:
			writeJSONError(w, http.StatusConflict, "community already exists")
		case in.Owner != "" && c.owner != "" && c.owner != in.Owner:
			writeJSONError(w, http.StatusConflict, "owner_conflict: the community has a different owner")
		default:
			writeJSON(w, http.StatusOK, map[string]any{"community_id": c.id, "host": c.host, "status": "existed", "owner_pubkey": c.owner})
		}
		return
	}
	if in.Owner != "" && r.ownedLocked(in.Owner) >= r.cfg.MaxCommunitiesPerOwner {
		writeJSON(w, http.StatusConflict, map[string]string{
			"error": "limit_reached: owner already has the maximum number of communities", "code": "limit_reached"})
		return
	}
	c := r.newCommunity(host, in.Owner, false)
	r.comms[host] = c
	writeJSON(w, http.StatusOK, map[string]any{
		"community_id": c.id, "host": c.host, "status": "created", "owner_pubkey": c.owner,
		"max_communities_per_owner": r.cfg.MaxCommunitiesPerOwner,
	})
}

// ownedLocked counts the owner's communities that are not deleted. Caller holds r.mu.
func (r *Relay) ownedLocked(owner string) int {
	n := 0
	for _, c := range r.comms {
		if c.owner == owner && c.deletion == nil {
			n++
		}
	}
	return n
}

func rfc3339(ts int64) any {
	if ts == 0 {
		return nil
	}
	return time.Unix(ts, 0).UTC().Format(time.RFC3339)
}

func (r *Relay) opList(w http.ResponseWriter, req *http.Request) {
	owner := req.URL.Query().Get("owner_pubkey")
	if !validPubKey(owner) {
		writeJSONError(w, http.StatusBadRequest, "invalid owner_pubkey")
		return
	}
	r.mu.RLock()
	list := []map[string]any{}
	for _, c := range r.comms {
		if c.owner == owner && c.deletion == nil {
			list = append(list, map[string]any{
				"community_id": c.id, "host": c.host, "created_at": rfc3339(c.createdAt), "archived_at": rfc3339(c.archivedAt),
			})
		}
	}
	r.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"owner_pubkey": owner, "communities": list, "quota_used": len(list),
		"quota_limit": r.cfg.MaxCommunitiesPerOwner, "can_create": len(list) < r.cfg.MaxCommunitiesPerOwner,
	})
}

func (r *Relay) opAvailability(w http.ResponseWriter, req *http.Request) {
	raw := req.URL.Query().Get("host")
	host := nostr.NormalizeHost(raw)
	if !validHost(host) {
		writeJSONError(w, http.StatusBadRequest, "invalid host: "+jsonString(raw))
		return
	}
	r.mu.RLock()
	c := r.comms[host]
	r.mu.RUnlock()
	var id any
	if c != nil {
		id = c.id // a tombstoned host still resolves, so it is never available
	}
	writeJSON(w, http.StatusOK, map[string]any{"host": raw, "normalized_host": host, "available": c == nil, "community_id": id})
}

func (r *Relay) opArchive(w http.ResponseWriter, body []byte, archive bool) {
	var in struct {
		Host  string `json:"host"`
		Owner string `json:"owner_pubkey"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	host := nostr.NormalizeHost(in.Host)
	r.mu.Lock()
	c := r.comms[host]
	if c == nil || c.owner == "" || c.owner != in.Owner {
		r.mu.Unlock()
		if c != nil && c.deployment {
			writeJSONError(w, http.StatusConflict, "the deployment community cannot be archived")
			return
		}
		writeJSONError(w, http.StatusNotFound, "community not found")
		return
	}
	if c.deployment {
		r.mu.Unlock()
		writeJSONError(w, http.StatusConflict, "the deployment community cannot be archived")
		return
	}
	if archive {
		if c.archivedAt == 0 {
			c.archivedAt = time.Now().Unix()
		}
		at := c.archivedAt
		r.mu.Unlock()
		c.closeAll(4000, "community archived")
		writeJSON(w, http.StatusOK, map[string]any{"community_id": c.id, "host": c.host, "archived_at": rfc3339(at), "status": "archived"})
		return
	}
	if c.deletion != nil {
		r.mu.Unlock()
		opError{http.StatusConflict, "a deletion is pending for this community", "deletion_lifecycle_conflict"}.write(w)
		return
	}
	c.archivedAt = 0
	r.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"community_id": c.id, "host": c.host, "archived_at": nil, "status": "active"})
}

// deletions by request id, guarded by r.mu.
func (r *Relay) findDeletion(id string) *deletionRequest {
	for _, c := range r.comms {
		if c.deletion != nil && c.deletion.requestID == id {
			return c.deletion
		}
	}
	return nil
}

func (r *Relay) opDelete(w http.ResponseWriter, body []byte) {
	var in struct {
		Host        string `json:"host"`
		CommunityID string `json:"community_id"`
		Owner       string `json:"owner_pubkey"`
		RequestID   string `json:"request_id"`
		Version     int    `json:"acknowledgement_version"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		opError{http.StatusBadRequest, "invalid JSON: " + err.Error(), "invalid_request"}.write(w)
		return
	}
	if in.Version != 1 {
		opError{http.StatusBadRequest, "unsupported acknowledgement_version", "unsupported_acknowledgement_version"}.write(w)
		return
	}
	if !isUUID(in.RequestID) || in.CommunityID != "" && !isUUID(in.CommunityID) {
		opError{http.StatusBadRequest, "request_id and community_id must be UUIDs", "invalid_request"}.write(w)
		return
	}
	if in.Host == "" || nostr.NormalizeHost(in.Host) != in.Host {
		opError{http.StatusBadRequest, "host must use its exact canonical authority spelling", "invalid_request"}.write(w)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.findDeletion(in.RequestID); d != nil {
		if d.host != in.Host || d.owner != in.Owner || d.version != in.Version {
			opError{http.StatusConflict, "request_id was used with different parameters", "deletion_request_conflict"}.write(w)
			return
		}
		writeJSON(w, http.StatusAccepted, r.deletionReply(d))
		return
	}
	c := r.comms[in.Host]
	switch {
	case c != nil && c.deployment:
		opError{http.StatusConflict, "the deployment community cannot be deleted", "protected_community"}.write(w)
	case c == nil || c.owner == "" || c.owner != in.Owner:
		opError{http.StatusNotFound, "community not found", "community_not_found"}.write(w)
	case in.CommunityID != "" && !strings.EqualFold(in.CommunityID, c.id):
		opError{http.StatusConflict, "community_id does not match the host", "community_id_mismatch"}.write(w)
	case c.deletion != nil:
		opError{http.StatusConflict, "a deletion is already active for this community", "deletion_lifecycle_conflict"}.write(w)
	case c.archivedAt == 0:
		opError{http.StatusConflict, "the community must be archived first", "community_not_archived"}.write(w)
	default:
		d := &deletionRequest{requestID: in.RequestID, host: c.host, owner: in.Owner, version: in.Version}
		c.deletion = d
		writeJSON(w, http.StatusAccepted, r.deletionReply(d))
		go r.runDeletion(c, d)
	}
}

func (r *Relay) deletionReply(d *deletionRequest) map[string]any {
	c := r.comms[d.host]
	return map[string]any{
		"request_id": d.requestID, "community_id": c.id, "host": d.host,
		"acknowledgement_version": d.version, "status": deletionStages[d.stage],
	}
}

// runDeletion walks the stages; the data goes at postgres_purged.
func (r *Relay) runDeletion(c *community, d *deletionRequest) {
	for i := 1; i < len(deletionStages); i++ {
		select {
		case <-r.closed:
			return
		case <-time.After(deletionStageStep):
		}
		r.mu.Lock()
		d.stage = i
		if deletionStages[i] == "postgres_purged" {
			d.deletedAt = time.Now().Unix()
			c.st.Store(r.newStore())
			c.channels.Clear()
			c.reads.Store(nil)
		}
		r.mu.Unlock()
	}
}

// opTransfer moves ownership (docs/buzz-protocol.md §3.9); the previous owner is demoted.
func (r *Relay) opTransfer(w http.ResponseWriter, body []byte) {
	var in struct {
		CommunityID string `json:"community_id"`
		NewOwner    string `json:"new_owner_pubkey"`
		Expected    string `json:"expected_owner_pubkey"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "invalid transfer JSON: "+err.Error())
		return
	}
	if !validPubKey(in.NewOwner) || !validPubKey(in.Expected) {
		writeJSONError(w, http.StatusBadRequest, "invalid owner pubkey")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var c *community
	for _, x := range r.comms {
		if strings.EqualFold(x.id, in.CommunityID) {
			c = x
		}
	}
	switch {
	case c == nil || c.owner == "":
		writeJSONError(w, http.StatusNotFound, "community has no owner to transfer from")
	case c.owner != in.Expected:
		writeJSONError(w, http.StatusConflict, "owner_conflict: the community is owned by another key")
	case c.deletion != nil:
		opError{http.StatusConflict, "a deletion is pending for this community", "deletion_lifecycle_conflict"}.write(w)
	case c.archivedAt != 0:
		writeJSONError(w, http.StatusConflict, "community must be active to transfer ownership")
	case c.owner == in.NewOwner:
		writeJSON(w, http.StatusOK, map[string]any{"community_id": c.id, "new_owner_pubkey": in.NewOwner, "status": "already_owner"})
	case r.ownedLocked(in.NewOwner) >= r.cfg.MaxCommunitiesPerOwner:
		opError{http.StatusConflict, "limit_reached: the new owner already has the maximum number of communities", "limit_reached"}.write(w)
	default:
		prev := c.owner
		c.owner = in.NewOwner
		c.roster.promote(in.NewOwner)
		writeJSON(w, http.StatusOK, map[string]any{"community_id": c.id, "new_owner_pubkey": in.NewOwner, "status": "transferred", "previous_owner": prev})
	}
}
