package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// Operator API (docs/buzz-protocol.md §3.9). Every call is NIP-98 signed with the
// client's Keys (the operator key) against OperatorOrigin, with the payload
// tag on bodies. Fields whose type docs/buzz-protocol.md leaves open are raw JSON.

// Default operation names of the operator calls.
const (
	OpProvisionCommunity = "operator_provision"
	OpListCommunities    = "operator_list"
	OpAvailability       = "operator_availability"
	OpArchiveCommunity   = "operator_archive"
	OpUnarchiveCommunity = "operator_unarchive"
	OpDeleteCommunity    = "operator_delete"
	OpTransferCommunity  = "operator_transfer"
)

// ProvisionReply answers POST /operator/communities.
type ProvisionReply struct {
	CommunityID string `json:"community_id"`
	Host        string `json:"host"`
	Status      string `json:"status"` // "created" or "existed"
	OwnerPubkey string `json:"owner_pubkey"`
}

// CommunityInfo is one row of GET /operator/communities.
type CommunityInfo struct {
	CommunityID string          `json:"community_id"`
	Host        string          `json:"host"`
	CreatedAt   json.RawMessage `json:"created_at"`
	ArchivedAt  json.RawMessage `json:"archived_at"` // null when active
}

// CommunityList answers GET /operator/communities?owner_pubkey=.
type CommunityList struct {
	OwnerPubkey string          `json:"owner_pubkey"`
	Communities []CommunityInfo `json:"communities"`
	QuotaUsed   *int            `json:"quota_used"`
	QuotaLimit  *int            `json:"quota_limit"`
	CanCreate   *bool           `json:"can_create"`
}

// Availability answers GET /operator/communities/availability?host=.
type Availability struct {
	Host           string  `json:"host"`
	NormalizedHost string  `json:"normalized_host"`
	Available      bool    `json:"available"`
	CommunityID    *string `json:"community_id"`
}

// ArchiveReply answers archive and unarchive.
type ArchiveReply struct {
	CommunityID string          `json:"community_id"`
	Host        string          `json:"host"`
	ArchivedAt  json.RawMessage `json:"archived_at"`
	Status      string          `json:"status"`      // "archived" / "active"
	Propagation string          `json:"propagation"` // "pending" on the 503 reply
}

// DeletionRequest is the body of POST /operator/communities/delete.
type DeletionRequest struct {
	Host                   string `json:"host"`
	CommunityID            string `json:"community_id,omitempty"`
	OwnerPubkey            string `json:"owner_pubkey"`
	RequestID              string `json:"request_id"`
	AcknowledgementVersion int    `json:"acknowledgement_version"`
}

// DeletionReply answers a deletion request (202).
type DeletionReply struct {
	RequestID              string `json:"request_id"`
	CommunityID            string `json:"community_id"`
	Host                   string `json:"host"`
	AcknowledgementVersion int    `json:"acknowledgement_version"`
	Status                 string `json:"status"` // the deletion stage
}

// TransferReply answers POST /operator/communities/transfer.
type TransferReply struct {
	CommunityID    string `json:"community_id"`
	NewOwnerPubkey string `json:"new_owner_pubkey"`
	Status         string `json:"status"` // "transferred" / "already_owner"
	PreviousOwner  string `json:"previous_owner"`
}

func opName(opt CallOptions, def string) string {
	if opt.Op != "" {
		return opt.Op
	}
	return def
}

func (h *HTTP) operator(ctx context.Context, opt CallOptions, def, method, path, rawQuery string, in, out any, validate func() error) (Response, Result) {
	return h.jsonCall(ctx, Request{Op: opName(opt, def), Method: method, Path: path, RawQuery: rawQuery,
		Operator: true, Timeout: opt.Timeout}, in, out, validate)
}

// ProvisionCommunity creates (or, without createOnly, finds) the community of host.
func (h *HTTP) ProvisionCommunity(ctx context.Context, host, ownerPubkey string, createOnly bool, opt CallOptions) (ProvisionReply, Result) {
	var out ProvisionReply
	in := map[string]any{"host": host, "initial_owner_pubkey": ownerPubkey, "create_only": createOnly}
	_, r := h.operator(ctx, opt, OpProvisionCommunity, http.MethodPost, "/operator/communities", "", in, &out,
		func() error { return needStr(out.CommunityID, "community_id") })
	return out, r
}

// ListCommunities lists the communities of an owner.
func (h *HTTP) ListCommunities(ctx context.Context, ownerPubkey string, opt CallOptions) (CommunityList, Result) {
	var out CommunityList
	q := url.Values{"owner_pubkey": {ownerPubkey}}.Encode()
	_, r := h.operator(ctx, opt, OpListCommunities, http.MethodGet, "/operator/communities", q, nil, &out, nil)
	return out, r
}

// CommunityAvailability asks whether host is free.
func (h *HTTP) CommunityAvailability(ctx context.Context, host string, opt CallOptions) (Availability, Result) {
	var out Availability
	q := url.Values{"host": {host}}.Encode()
	_, r := h.operator(ctx, opt, OpAvailability, http.MethodGet, "/operator/communities/availability", q, nil, &out, nil)
	return out, r
}

// ArchiveCommunity archives host as its owner. A 503 with
// "propagation":"pending" is an error (retry) and out still holds the body.
func (h *HTTP) ArchiveCommunity(ctx context.Context, host, ownerPubkey string, opt CallOptions) (ArchiveReply, Result) {
	var out ArchiveReply
	in := map[string]string{"host": host, "owner_pubkey": ownerPubkey}
	resp, r := h.operator(ctx, opt, OpArchiveCommunity, http.MethodPost, "/operator/communities/archive", "", in, &out, nil)
	if r.Outcome != OutcomeOK && resp.Status == http.StatusServiceUnavailable {
		_ = json.Unmarshal(resp.Body, &out)
	}
	return out, r
}

// UnarchiveCommunity reverses ArchiveCommunity.
func (h *HTTP) UnarchiveCommunity(ctx context.Context, host, ownerPubkey string, opt CallOptions) (ArchiveReply, Result) {
	var out ArchiveReply
	in := map[string]string{"host": host, "owner_pubkey": ownerPubkey}
	_, r := h.operator(ctx, opt, OpUnarchiveCommunity, http.MethodPost, "/operator/communities/unarchive", "", in, &out, nil)
	return out, r
}

// DeleteCommunity requests the owner deletion of an archived community.
func (h *HTTP) DeleteCommunity(ctx context.Context, req DeletionRequest, opt CallOptions) (DeletionReply, Result) {
	var out DeletionReply
	_, r := h.operator(ctx, opt, OpDeleteCommunity, http.MethodPost, "/operator/communities/delete", "", req, &out,
		func() error { return needStr(out.Status, "status") })
	return out, r
}

// TransferCommunity moves a community to a new owner.
func (h *HTTP) TransferCommunity(ctx context.Context, communityID, newOwner, expectedOwner string, opt CallOptions) (TransferReply, Result) {
	var out TransferReply
	in := map[string]string{"community_id": communityID, "new_owner_pubkey": newOwner, "expected_owner_pubkey": expectedOwner}
	_, r := h.operator(ctx, opt, OpTransferCommunity, http.MethodPost, "/operator/communities/transfer", "", in, &out, nil)
	return out, r
}

func needStr(v, field string) error {
	if v == "" {
		return errors.New("reply lacks " + field)
	}
	return nil
}

// --- /buzz/v1 (docs/buzz-protocol.md §3.10) ---

// Default operation names of the /buzz/v1 calls.
const (
	OpSidebar        = "buzz_v1_sidebar"
	OpReadState      = "buzz_v1_read_state"
	OpWriteReadState = "buzz_v1_write_read_state"
)

// CountValue is a /buzz/v1 count object: {"status":"exact"|"at_least","value":n} or {"status":"unknown"}.
type CountValue struct {
	Status string `json:"status"`
	Value  *int64 `json:"value"`
}

// SidebarReply answers GET /buzz/v1/me/sidebar. Rows stay raw: their
// identity fields differ between relay versions.
type SidebarReply struct {
	Account    json.RawMessage   `json:"account"`
	Channels   []json.RawMessage `json:"channels"`
	NextCursor *string           `json:"next_cursor"`
}

// Sidebar reads the sidebar; rawQuery is e.g. "limit=20" or "channel_ids=a,b".
func (h *HTTP) Sidebar(ctx context.Context, rawQuery string, opt CallOptions) (SidebarReply, Result) {
	var out SidebarReply
	_, r := h.jsonCall(ctx, Request{Op: opName(opt, OpSidebar), Method: http.MethodGet, Path: "/buzz/v1/me/sidebar",
		RawQuery: rawQuery, Timeout: opt.Timeout}, nil, &out, func() error {
		if out.Channels == nil {
			return errors.New("reply lacks channels")
		}
		return nil
	})
	return out, r
}

// ReadStateReply answers GET /buzz/v1/me/read-state.
type ReadStateReply struct {
	Account  json.RawMessage   `json:"account"`
	Contexts []json.RawMessage `json:"contexts"`
}

// ReadState reads read contexts; targets is the JSON array the API takes
// (it is URL-encoded here).
func (h *HTTP) ReadState(ctx context.Context, targets []byte, opt CallOptions) (ReadStateReply, Result) {
	var out ReadStateReply
	if !json.Valid(targets) {
		return out, h.recordLocal(opName(opt, OpReadState), errors.New("read-state targets are not valid JSON"))
	}
	q := url.Values{"targets": {string(targets)}}.Encode()
	_, r := h.jsonCall(ctx, Request{Op: opName(opt, OpReadState), Method: http.MethodGet, Path: "/buzz/v1/me/read-state",
		RawQuery: q, Timeout: opt.Timeout}, nil, &out, func() error {
		if out.Contexts == nil {
			return errors.New("reply lacks contexts")
		}
		return nil
	})
	return out, r
}

// WriteReadState POSTs {"intents": intents} and decodes the reply into out
// (nil: any JSON object).
func (h *HTTP) WriteReadState(ctx context.Context, intents any, out any, opt CallOptions) Result {
	_, r := h.JSON(ctx, Request{Op: opName(opt, OpWriteReadState), Method: http.MethodPost, Path: "/buzz/v1/me/read-state",
		Timeout: opt.Timeout}, map[string]any{"intents": intents}, out)
	return r
}

// OpDrill is the operation name of POST /operator/drill.
const OpDrill = "operator_drill"

// DrillReply answers POST /operator/drill (buzzload's own relay: its
// drills at run time; a real Buzz has no such route).
type DrillReply struct {
	Kind    string `json:"kind"`
	Sockets int    `json:"sockets"`
}

// Drill asks a `buzzload relay` to perform a drill now (modules/relay
// drills.go): kind restart, stall, limiter_outage or slow_store.
func (h *HTTP) Drill(ctx context.Context, kind string, durationSecs, jitterSecs, delayMs float64, opt CallOptions) (DrillReply, Result) {
	var out DrillReply
	in := map[string]any{"kind": kind, "duration_secs": durationSecs, "jitter_secs": jitterSecs, "delay_ms": delayMs}
	_, r := h.operator(ctx, opt, OpDrill, http.MethodPost, "/operator/drill", "", in, &out, nil)
	return out, r
}
