package localrelay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/buzzload/buzzload/modules/nostr"
)

// ingestAuth is who submits an event and through which door.
type ingestAuth struct {
	pubkey     string
	agentOwner string
	ws         bool
}

// ingestResult is the OK (WS) or the /events reply (HTTP).
type ingestResult struct {
	accepted  bool
	message   string
	throttled bool
	status    int // HTTP status for a rejection: 400, 403, 429 or 500
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
	if err := ev.CheckShape(); err != nil {
		return reject("invalid: " + strings.TrimPrefix(err.Error(), "nostr: "))
	}
	if ev.Tags == nil {
		ev.Tags = [][]string{}
	}
	k := ev.Kind
	switch {
	case k == nostr.KindClientAuth:
		return reject("invalid: AUTH events cannot be submitted")
	case k == kindMemberAdded || k == kindMemberRemove:
		return reject("invalid: membership notifications are relay-signed only")
	case !auth.ws && (k == kindGiftWrap || k == kindPresence):
		return rejectf("invalid: kind %d is only accepted via WebSocket", k)
	case relayOnlyKinds[k]:
		return reject("restricted: relay-only kind")
	case !allowedKinds[k]:
		return reject("restricted: unknown event kind")
	}
	if r.cfg.VerifySignatures {
		if err := ev.Verify(); err != nil {
			if errors.Is(err, nostr.ErrBadID) {
				return reject("invalid: event id does not match its content")
			}
			return reject("invalid: signature verification failed")
		}
	}
	now := time.Now()
	skew := int64(r.cfg.CreatedAtSkew / time.Second)
	if k == kindObserver {
		skew = 300
	}
	if d := ev.CreatedAt - now.Unix(); d > skew || d < -skew {
		return reject("invalid: event timestamp too far from server time")
	}
	if len(ev.Content) > r.cfg.MaxContentBytes {
		return rejectf("invalid: content exceeds maximum size of %d bytes (got %d)", r.cfg.MaxContentBytes, len(ev.Content))
	}
	if ev.PubKey != auth.pubkey && k != kindGiftWrap {
		return ingestResult{message: "invalid: event pubkey does not match authenticated identity", status: http.StatusForbidden}
	}
	if !isEphemeral(k) {
		if reason := c.limits.message(auth.pubkey, auth.agentOwner != "", now); reason != "" {
			return ingestResult{message: reason, throttled: true, status: http.StatusTooManyRequests}
		}
	}
	if isEphemeral(k) {
		return r.ingestEphemeral(c, ev, auth, now)
	}

	c.mu.Lock()
	res, entries := r.ingestLocked(c, ev, auth)
	c.mu.Unlock()
	for _, e := range entries {
		c.fanout(e)
	}
	return res
}

// ingestEphemeral handles 20000-29999: fanned out live, never stored.
func (r *Relay) ingestEphemeral(c *community, ev *nostr.Event, auth ingestAuth, now time.Time) ingestResult {
	e := newEntry(ev, "")
	switch ev.Kind {
	case kindPresence:
		switch ev.Content {
		case "online", "away", "offline":
		default:
			return reject("invalid: presence content must be online, away or offline")
		}
		c.mu.Lock()
		p := c.presence[ev.PubKey]
		if p == nil {
			p = &presenceState{}
			c.presence[ev.PubKey] = p
		}
		p.status = ev.Content
		c.mu.Unlock()
	case kindObserver:
		if reason := r.checkObserver(c, ev, auth, now); reason != "" {
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
			c.mu.RLock()
			reason := c.writeAccess(ch, ev.PubKey, ev.Kind)
			c.mu.RUnlock()
			if reason != "" {
				return reject(reason)
			}
			e.Channel = ch
		}
	}
	c.fanout(e)
	return accept("")
}

// checkObserver applies the kind-24200 rules (digest §4.9).
func (r *Relay) checkObserver(c *community, ev *nostr.Event, auth ingestAuth, now time.Time) string {
	p, agent, frame := ev.TagValue("p"), ev.TagValue("agent"), ev.TagValue("frame")
	if p == "" || agent == "" || (frame != "telemetry" && frame != "control") {
		return "invalid: observer frames need p, agent and frame (telemetry|control) tags"
	}
	if n := len(ev.Content); n < 132 || n > 87472 {
		return "invalid: observer frame content must be NIP-44 v2 ciphertext (132-87472 chars)"
	}
	c.mu.RLock()
	senderOwner := c.agentOwner[ev.PubKey]
	recipientOwner := c.agentOwner[p]
	c.mu.RUnlock()
	switch {
	case senderOwner != "" && senderOwner == p && agent == ev.PubKey: // agent -> owner
	case recipientOwner == ev.PubKey && agent == p: // owner -> agent
	default:
		return "restricted: observer frames require an owner relation"
	}
	return c.limits.observer(agent, now)
}

// writeAccess checks that pubkey may write kind k into channel ch: the
// channel exists, is not archived, and pubkey is a member or it is open.
// Caller holds c.mu.
func (c *community) writeAccess(chID, pubkey string, k int) string {
	ch := c.channels[chID]
	if ch == nil || ch.deleted {
		return "restricted: not a channel member"
	}
	if _, member := ch.members[pubkey]; !member && ch.visibility != "open" {
		return "restricted: not a channel member"
	}
	if ch.archived {
		return "invalid: channel is archived"
	}
	return ""
}

// ingestLocked validates and stores a durable event. It returns the result
// and the entries to fan out once the lock is released. Caller holds c.mu.
func (r *Relay) ingestLocked(c *community, ev *nostr.Event, auth ingestAuth) (ingestResult, []*Entry) {
	k := ev.Kind
	if k != kindReaction {
		if old := c.store.Get(ev.ID); old != nil {
			return accept("duplicate:"), nil
		}
	}
	// Resolve the channel: reactions and deletions take the target's.
	chID := ""
	var target *Entry
	switch k {
	case kindReaction:
		tid := lastETag(ev)
		if tid == "" {
			return reject("invalid: reaction must reference a target event via e tag"), nil
		}
		target = c.store.Get(tid)
		if target == nil || target.Deleted {
			return reject("invalid: reaction target event not found"), nil
		}
		chID = target.Channel
	case kindDeletion:
		ne, na := countTags(ev, "e"), countTags(ev, "a")
		if ne+na != 1 {
			return rejectf("invalid: deletion events must reference exactly one target via e or a tag (got e=%d, a=%d)", ne, na), nil
		}
		if ne == 1 {
			target = c.store.Get(ev.TagValue("e"))
		} else {
			target = c.replaceable[addrToKey(ev.TagValue("a"))]
		}
		if target == nil || target.Deleted {
			return reject("invalid: deletion target event not found"), nil
		}
		chID = target.Channel
	case kindCreateGroup:
		chID = eventChannel(ev)
		if chID == "" {
			chID = newUUID()
		}
	default:
		if channelKinds[k] || k == kindJoin {
			chID = eventChannel(ev)
		}
	}
	if (channelKinds[k] || k == kindJoin) && chID == "" {
		return reject("invalid: channel-scoped events must include an h tag"), nil
	}
	if chID != "" && k != kindCreateGroup && k != kindJoin {
		unarchive := k == kindEditMeta && hasTagValue(ev, "archived", "false")
		if reason := c.writeAccess(chID, ev.PubKey, k); reason != "" && !(unarchive && reason == "invalid: channel is archived") {
			return reject(reason), nil
		}
	}

	en := newEntry(ev, chID)
	var extra []*Entry
	switch k {
	case kindCreateGroup:
		res, ex := c.createChannel(ev, chID)
		if !res.accepted {
			return res, nil
		}
		extra = ex
	case kindAddUser, kindRemoveUser, kindJoin, kindLeave, kindEditMeta, kindDeleteGroup:
		res, ex := r.membership(c, ev, chID)
		if !res.accepted {
			return res, nil
		}
		extra = ex
	case kindReaction:
		content := ev.Content
		if content == "" {
			content = "+"
		}
		if n := utf8.RuneCountInString(content); n > 64 {
			return rejectf("invalid: reaction emoji exceeds 64 characters (got %d)", n), nil
		}
		key := reactionKey{ev.PubKey, target.Event.ID, content}
		if _, dup := c.reactions[key]; dup {
			return ingestResult{message: "duplicate: reaction already exists", status: http.StatusOK}, nil
		}
		if c.store.Get(ev.ID) != nil {
			return accept("duplicate:"), nil
		}
		c.reactions[key] = ev.ID
	case kindDeletion, kindModDelete:
		if k == kindModDelete {
			if n := countTags(ev, "e"); n != 1 {
				return rejectf("invalid: deletion events must reference exactly one target via e or a tag (got e=%d, a=%d)", n, countTags(ev, "a")), nil
			}
			target = c.store.Get(ev.TagValue("e"))
			if target == nil || target.Deleted {
				return reject("invalid: deletion target event not found"), nil
			}
		}
		if target.Event.PubKey != ev.PubKey && !c.isAdmin(target.Channel, ev.PubKey) {
			return reject("restricted: only the author or a channel admin can delete this event"), nil
		}
		c.remove(target)
	case kindEdit:
		tid := ev.TagValue("e")
		t := c.store.Get(tid)
		if t == nil || t.Deleted {
			return reject("invalid: edit target event not found"), nil
		}
		if t.Channel != chID {
			return reject("invalid: target event belongs to a different channel"), nil
		}
		if t.Event.PubKey != ev.PubKey {
			return reject("invalid: must be event author to edit"), nil
		}
	case kindProfile:
		if !json.Valid([]byte(ev.Content)) {
			return reject("invalid: kind:0 content must be valid JSON"), nil
		}
	case kindReminder:
		if ev.Tag("d") == nil {
			return reject("invalid: reminders require a d tag"), nil
		}
	}
	if threadKinds[k] && chID != "" {
		if reason := c.resolveThread(en); reason != "" {
			return reject(reason), nil
		}
	}

	if isReplaceable(k) || isAddressable(k) {
		if !c.storeReplaceable(en, false) {
			return accept("duplicate: have a newer event"), nil
		}
	} else {
		c.store.Add(en)
	}
	if en.Depth > 0 {
		c.noteReply(en)
		c.replies[en.Root] = insertSorted(c.replies[en.Root], en)
	}
	switch k {
	case kindReaction:
		c.auxByTarget[target.Event.ID] = append(c.auxByTarget[target.Event.ID], en)
	case kindDeletion, kindModDelete, kindEdit:
		if t := ev.TagValue("e"); t != "" {
			c.auxByTarget[t] = append(c.auxByTarget[t], en)
		}
	}
	if ch := c.channels[chID]; ch != nil && en.Depth == 0 && buzzV1Eligible[k] {
		ch.lastMessage = en
	}
	return accept(""), append([]*Entry{en}, extra...)
}

// remove marks target deleted and forgets a deleted reaction.
func (c *community) remove(t *Entry) {
	t.Deleted = true
	if t.Event.Kind == kindReaction {
		content := t.Event.Content
		if content == "" {
			content = "+"
		}
		delete(c.reactions, reactionKey{t.Event.PubKey, lastETag(t.Event), content})
	}
	if isReplaceable(t.Event.Kind) || isAddressable(t.Event.Kind) {
		if c.replaceable[replaceKey(t.Event)] == t {
			delete(c.replaceable, replaceKey(t.Event))
		}
	}
}

func (c *community) isAdmin(chID, pk string) bool {
	ch := c.channels[chID]
	if ch == nil {
		return false
	}
	role := ch.members[pk]
	return role == "owner" || role == "admin"
}

// resolveThread fills en's thread metadata from NIP-10 marked e tags
// (digest §4.3). Only tags with a root/reply marker count.
func (c *community) resolveThread(en *Entry) string {
	var root, reply string
	for _, t := range en.Event.Tags {
		if len(t) >= 4 && t[0] == "e" && isHexLen(t[1], 64) {
			switch t[3] {
			case "root":
				root = t[1]
			case "reply":
				reply = t[1]
			}
		}
	}
	if reply == "" {
		return "" // no reply marker: a top-level event
	}
	if root == "" {
		root = reply
	}
	parent := c.store.Get(reply)
	if parent == nil {
		return "invalid: reply parent not found"
	}
	if parent.Channel != en.Channel {
		return "invalid: reply parent event belongs to a different channel"
	}
	effRoot, depth := parent.Event.ID, 1
	if parent.Depth > 0 {
		effRoot, depth = parent.Root, parent.Depth+1
	}
	if root != effRoot {
		return "invalid: root tag does not match thread ancestry"
	}
	if depth > 100 {
		return "invalid: thread depth limit exceeded"
	}
	en.Root, en.Parent, en.Depth = effRoot, parent.Event.ID, depth
	en.Broadcast = hasTagValue(en.Event, "broadcast", "1")
	return ""
}

// noteReply updates the root's thread summary (the 39005 source).
func (c *community) noteReply(en *Entry) {
	st := c.threads[en.Root]
	if st == nil {
		st = &threadStats{}
		c.threads[en.Root] = st
	}
	st.descendants++
	if en.Depth == 1 {
		st.replies++
	}
	if en.Event.CreatedAt > st.lastReplyAt {
		st.lastReplyAt = en.Event.CreatedAt
	}
	ps := []string{en.Event.PubKey}
	for _, p := range st.participants {
		if p != en.Event.PubKey && len(ps) < 10 {
			ps = append(ps, p)
		}
	}
	st.participants = ps
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

// addrToKey turns an `a` value kind:pubkey:d into a replaceable key.
func addrToKey(a string) string {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 {
		return ""
	}
	return parts[1] + ":" + parts[0] + ":" + parts[2]
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
