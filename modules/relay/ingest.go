package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// ingestAuth is who submits an event and through which door.
type ingestAuth struct {
	pubkey     string
	pub        *btcec.PublicKey // pubkey parsed once per connection (nil: parse per event)
	agentOwner string
	ws         bool
}

// ingestResult is the OK (WS) or the /events reply (HTTP).
type ingestResult struct {
	accepted  bool
	message   string
	throttled bool
	status    int  // HTTP status for a rejection: 400, 403, 429 or 500
	unstored  bool // acknowledged, not stored (the LoseAcked fault): not counted stored
}

func accept(msg string) ingestResult {
	return ingestResult{accepted: true, message: msg, status: http.StatusOK}
}
func reject(msg string) ingestResult {
	return ingestResult{message: msg, status: http.StatusBadRequest}
}

// rejectf formats a rejection reason.
func rejectf(format string, a ...any) ingestResult { return reject(fmt.Sprintf(format, a...)) }

// ingest is the shared EVENT path of WS and POST /events (Buzz's
// "two doors, one room"). The order of checks follows Buzz's pipeline.
func (r *Relay) ingest(c *community, ev *nostr.Event, auth ingestAuth) ingestResult {
	res := r.ingestEvent(c, ev, auth)
	r.stats.count(res)
	r.countIngest(ev.Kind, auth, res, isEphemeral(ev.Kind))
	return res
}

func (r *Relay) ingestEvent(c *community, ev *nostr.Event, auth ingestAuth) ingestResult {
	if err := ev.CheckShape(); err != nil {
		return reject("invalid: " + strings.TrimPrefix(err.Error(), "nostr: "))
	}
	if ev.Tags == nil {
		ev.Tags = [][]string{}
	}
	k := ev.Kind
	// Admission before validation, as Buzz's (PR #7736: "non-ephemeral
	// EVENT attempts remain charged, including attempts later rejected by
	// authorization or validation"): the shared limiter (down in the
	// LimiterOutage drill: it fails closed), then the messages quota, on
	// the socket only (an HTTP publish is charged to the API quota at the
	// bridge; Buzz's submit_event_authed has no messages check).
	if r.limiterDown() {
		return ingestResult{message: AdmissionUnavailable, throttled: true, status: http.StatusServiceUnavailable}
	}
	if auth.ws && !isEphemeral(k) {
		if reason := c.limits.message(auth.pubkey, auth.agentOwner != "", time.Now()); reason != "" {
			return ingestResult{message: reason, throttled: true, status: http.StatusTooManyRequests}
		}
	}
	switch {
	case k == nostr.KindClientAuth:
		return reject("invalid: AUTH events cannot be submitted")
	case k == nostr.KindMemberAdded || k == nostr.KindMemberRemoved:
		return reject("invalid: membership notifications are relay-signed only")
	case !auth.ws && (k == nostr.KindGiftWrap || k == nostr.KindPresence):
		return rejectf("invalid: kind %d is only accepted via WebSocket", k)
	case relayOnlyKinds[k]:
		return reject("restricted: relay-only kind")
	case k == nostr.KindRelayAddMember || k == nostr.KindRelayRemoveMember:
		// NIP-43 admin commands: checked below, applied by relayAdmin.
	case !allowedKinds[k]:
		return reject("restricted: unknown event kind")
	}
	if r.cfg.VerifySignatures {
		var pub *btcec.PublicKey
		if ev.PubKey == auth.pubkey {
			pub = auth.pub
		}
		switch verifyWithKey(ev, pub) {
		case verifyBadID:
			return reject("invalid: event id does not match its content")
		case verifyBadSig:
			return reject("invalid: signature verification failed")
		}
	}
	now := time.Now()
	skew := int64(r.cfg.CreatedAtSkew / time.Second)
	if k == nostr.KindObserverFrame {
		skew = 300
	}
	if d := ev.CreatedAt - now.Unix(); d > skew || d < -skew {
		return reject("invalid: event timestamp too far from server time")
	}
	if len(ev.Content) > r.cfg.MaxContentBytes {
		return rejectf("invalid: content exceeds maximum size of %d bytes (got %d)", r.cfg.MaxContentBytes, len(ev.Content))
	}
	if k == nostr.KindProjectRevision {
		// NIP-MP: accepted only as a valid revision envelope. The OK
		// prefix Buzz puts before the envelope's error was not determined
		// (docs/buzz-names.md §d): "invalid: " as for its other validation.
		if why := projectRevisionError(ev); why != "" {
			return reject("invalid: " + why)
		}
	}
	if ev.PubKey != auth.pubkey && k != nostr.KindGiftWrap {
		return ingestResult{message: "invalid: event pubkey does not match authenticated identity", status: http.StatusForbidden}
	}
	if k == nostr.KindRelayAddMember || k == nostr.KindRelayRemoveMember {
		return r.relayAdmin(c, ev)
	}
	if isEphemeral(k) {
		return r.ingestEphemeral(c, ev, auth, now)
	}
	res, entries := r.ingestDurable(c, ev)
	for _, e := range entries {
		c.fanout(e)
	}
	if res.accepted && len(entries) > 0 && r.faults.takeRefusal(ev.Kind, ev.ID) {
		// test fault: stored and delivered, yet refused to its author
		return ingestResult{message: "error: injected refusal", status: http.StatusInternalServerError}
	}
	return res
}

// ingestEphemeral handles 20000-29999: fanned out live, never stored.
func (r *Relay) ingestEphemeral(c *community, ev *nostr.Event, auth ingestAuth, now time.Time) ingestResult {
	e := newEntry(ev, "")
	switch ev.Kind {
	case nostr.KindPresence:
		switch ev.Content {
		case "online", "away", "offline":
		default:
			return reject("invalid: presence content must be online, away or offline")
		}
		c.setPresence(ev.PubKey, ev.Content)
	case nostr.KindObserverFrame:
		if reason := r.checkObserver(c, ev, now); reason != "" {
			if strings.HasPrefix(reason, "rate-limited:") {
				return ingestResult{message: reason, throttled: true, status: http.StatusTooManyRequests}
			}
			return reject(reason)
		}
	default:
		ch := eventChannel(ev)
		if channelKinds[ev.Kind] && ch == "" {
			return reject("invalid: channel-scoped events must include an h tag")
		}
		if ch != "" {
			if reason := c.writeAccess(ch, ev.PubKey); reason != "" {
				return reject(reason)
			}
			e.Channel = ch
		}
	}
	c.fanout(e)
	return accept("")
}

// checkObserver applies the kind-24200 rules (docs/buzz-protocol.md §4.9).
func (r *Relay) checkObserver(c *community, ev *nostr.Event, now time.Time) string {
	p, agent, frame := ev.TagValue("p"), ev.TagValue("agent"), ev.TagValue("frame")
	if p == "" || agent == "" || (frame != "telemetry" && frame != "control") {
		return "invalid: observer frames need p, agent and frame (telemetry|control) tags"
	}
	if n := len(ev.Content); n < 132 || n > 87472 {
		return "invalid: observer frame content must be NIP-44 v2 ciphertext (132-87472 chars)"
	}
	senderOwner, _ := c.agentOwner.Load(ev.PubKey)
	recipientOwner, _ := c.agentOwner.Load(p)
	switch {
	case senderOwner != nil && senderOwner.(string) == p && agent == ev.PubKey: // agent -> owner
	case recipientOwner != nil && recipientOwner.(string) == ev.PubKey && agent == p: // owner -> agent
	default:
		return "restricted: observer frames require an owner relation"
	}
	return c.limits.observer(agent, now)
}

// writeAccess checks that pubkey may write into channel chID: the channel
// exists, is not archived, and pubkey is a member or it is open.
func (c *community) writeAccess(chID, pubkey string) string {
	ch := c.channel(chID)
	if ch == nil {
		return "restricted: not a channel member"
	}
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	if ch.deleted {
		return "restricted: not a channel member"
	}
	if _, member := ch.members[pubkey]; !member && (ch.visibility != "open" || c.relay.cfg.RequireChannelMembership) {
		return "restricted: not a channel member"
	}
	if ch.archived {
		return "invalid: channel is archived"
	}
	return ""
}

func (c *community) isAdmin(chID, pk string) bool {
	ch := c.channel(chID)
	if ch == nil {
		return false
	}
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	role := ch.members[pk]
	return role == "owner" || role == "admin"
}

// ingestDurable validates and stores an event that is not ephemeral and
// returns the entries to fan out. The store serialises per channel; channel
// state changes take the channel's lock.
func (r *Relay) ingestDurable(c *community, ev *nostr.Event) (ingestResult, []*entry) {
	st := c.store()
	k := ev.Kind
	if k != nostr.KindReaction {
		if _, exists := st.Lookup(ev.ID); exists {
			return accept("duplicate:"), nil
		}
	}
	// Resolve the channel: reactions and deletions take the target's.
	chID := ""
	var targetAuthor, targetChannel string
	switch k {
	case nostr.KindReaction:
		if lastETag(ev) == "" {
			return reject("invalid: reaction must reference a target event via e tag"), nil
		}
		target, err := st.CheckReaction(ev)
		if err != nil {
			if errors.Is(err, store.ErrDuplicateReaction) {
				return ingestResult{message: err.Error(), status: http.StatusOK}, nil
			}
			return reject(err.Error()), nil
		}
		if info, ok := st.Lookup(target.ID); ok {
			chID = info.Channel
		}
	case nostr.KindDeletion, nostr.KindDeleteEvent:
		ne, na := countTags(ev, "e"), countTags(ev, "a")
		if ne+na != 1 || k == nostr.KindDeleteEvent && ne != 1 {
			return rejectf("invalid: deletion events must reference exactly one target via e or a tag (got e=%d, a=%d)", ne, na), nil
		}
		var target *nostr.Event
		if ne == 1 {
			if info, ok := st.Lookup(ev.TagValue("e")); ok && !info.Deleted {
				target, targetChannel = info.Event, info.Channel
			}
		} else if t := c.addressed(ev.TagValue("a")); t != nil {
			target = t
			if info, ok := st.Lookup(t.ID); ok {
				targetChannel = info.Channel
			}
		}
		if target == nil {
			return reject("invalid: deletion target event not found"), nil
		}
		targetAuthor = target.PubKey
		chID = targetChannel
	case nostr.KindCreateGroup:
		chID = eventChannel(ev)
		if chID == "" {
			chID = newUUID()
		}
	default:
		if channelKinds[k] || k == nostr.KindJoinRequest {
			chID = eventChannel(ev)
		}
	}
	if (channelKinds[k] || k == nostr.KindJoinRequest) && chID == "" {
		return reject("invalid: channel-scoped events must include an h tag"), nil
	}
	if chID != "" && k != nostr.KindCreateGroup && k != nostr.KindJoinRequest {
		unarchive := k == nostr.KindEditMetadata && hasTagValue(ev, "archived", "false")
		if reason := c.writeAccess(chID, ev.PubKey); reason != "" && !(unarchive && reason == "invalid: channel is archived") {
			return reject(reason), nil
		}
	}

	// Check, store, then apply (code review D7): a channel or membership
	// change is applied under its lock only once its event is stored, so
	// two copies of one event arriving together apply it once, and an
	// event that is not stored changes nothing.
	cm := &committer{}
	cm.fn = func() (ingestResult, bool) {
		res, ch, ok := r.store(st, ev)
		cm.channel = ch
		return res, ok
	}
	var extra []*entry
	admin := false
	switch k {
	case nostr.KindCreateGroup:
		res, ex := c.createChannel(ev, chID, cm)
		if !res.accepted {
			return res, nil
		}
		extra = ex
	case nostr.KindPutUser, nostr.KindRemoveUser, nostr.KindJoinRequest, nostr.KindLeaveRequest, nostr.KindEditMetadata, nostr.KindDeleteGroup:
		res, ex := r.membership(c, ev, chID, cm)
		if !res.accepted || !cm.ok {
			return res, nil
		}
		extra = ex
	case nostr.KindReaction:
		content := ev.Content
		if content == "" {
			content = "+"
		}
		if n := utf8.RuneCountInString(content); n > 64 {
			return rejectf("invalid: reaction emoji exceeds 64 characters (got %d)", n), nil
		}
	case nostr.KindDeletion, nostr.KindDeleteEvent:
		admin = c.isAdmin(targetChannel, ev.PubKey)
		if targetAuthor != ev.PubKey && !admin {
			return reject("restricted: only the author or a channel admin can delete this event"), nil
		}
	case nostr.KindStreamMessageEdit:
		info, ok := st.Lookup(ev.TagValue("e"))
		if !ok || info.Deleted {
			return reject("invalid: edit target event not found"), nil
		}
		if info.Channel != chID {
			return reject("invalid: target event belongs to a different channel"), nil
		}
		if info.Event.PubKey != ev.PubKey {
			return reject("invalid: must be event author to edit"), nil
		}
	case nostr.KindProfile:
		if !json.Valid([]byte(ev.Content)) {
			return reject("invalid: kind:0 content must be valid JSON"), nil
		}
	case nostr.KindReminder:
		if ev.Tag("d") == nil {
			return reject("invalid: reminders require a d tag"), nil
		}
	}
	if threadKinds[k] && chID != "" {
		if _, err := st.CheckReply(ev); err != nil {
			return reject(err.Error()), nil
		}
	}

	if res, ok := cm.commit(); !ok {
		return res, nil
	}
	if k == nostr.KindDeletion || k == nostr.KindDeleteEvent {
		st.ApplyDeletion(ev, admin)
	}
	return accept(""), append([]*entry{newEntry(ev, cm.channel)}, extra...)
}

// committer stores an event once, before the first state change it makes.
type committer struct {
	fn      func() (ingestResult, bool)
	done    bool
	res     ingestResult
	ok      bool   // stored: apply and fan out
	channel string // the store's channel of the event
}

func (c *committer) commit() (ingestResult, bool) {
	if !c.done {
		c.done = true
		c.res, c.ok = c.fn()
	}
	return c.res, c.ok
}

// store adds ev to st: ok when it was stored, with the store's channel of
// it; otherwise res is the answer.
func (r *Relay) store(st *store.Store, ev *nostr.Event) (res ingestResult, channel string, ok bool) {
	if r.faults.takeLoss(ev.Kind, ev.ID) {
		res := accept("")
		res.unstored = true
		return res, "", false // test fault: acknowledged, never stored
	}
	added := st.Add(ev)
	switch added.Status {
	case store.Stored:
		return accept(""), added.Channel, true
	case store.Duplicate, store.Deleted:
		return accept("duplicate:"), "", false
	case store.Superseded:
		return accept("duplicate: have a newer event"), "", false
	case store.DuplicateReaction:
		return ingestResult{message: "duplicate: reaction already exists", status: http.StatusOK}, "", false
	default:
		r.logf("ERROR relay: store %s: unexpected status %v", ev.ID, added.Status)
		return ingestResult{message: "error: internal server error", status: http.StatusInternalServerError}, "", false
	}
}

// addressed returns the current event at an `a` coordinate kind:pubkey:d.
func (c *community) addressed(coord string) *nostr.Event {
	parts := strings.SplitN(coord, ":", 3)
	if len(parts) != 3 {
		return nil
	}
	kind, err := strconv.Atoi(parts[0])
	if err != nil {
		return nil
	}
	one := 1
	f := store.Filter{Kinds: []int{kind}, Authors: []string{parts[1]}, Tags: map[string][]string{"d": {parts[2]}}, Limit: &one}
	evs := c.store().Query([]store.Filter{f}, store.Reader{})
	if len(evs) == 0 {
		return nil
	}
	return evs[0]
}

func lastETag(e *nostr.Event) string {
	for i := len(e.Tags) - 1; i >= 0; i-- {
		t := e.Tags[i]
		if len(t) >= 2 && t[0] == "e" && isHexLen(t[1], 64) {
			return t[1]
		}
	}
	return ""
}

func countTags(e *nostr.Event, name string) int {
	n := 0
	for _, t := range e.Tags {
		if len(t) > 0 && t[0] == name {
			n++
		}
	}
	return n
}

func hasTagValue(e *nostr.Event, name, value string) bool {
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == name && t[1] == value {
			return true
		}
	}
	return false
}

func isHexLen(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
