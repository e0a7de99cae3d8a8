package relay

import (
	"encoding/json"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// createChannel handles kind 9007 (docs/buzz-protocol.md §4.6).
func (c *community) createChannel(ev *nostr.Event, chID string, cm *committer) (ingestResult, []*entry) {
	name := strings.TrimSpace(ev.TagValue("name"))
	if name == "" {
		return reject("invalid: channel name is required"), nil
	}
	vis := "open"
	if t := ev.Tag("visibility"); len(t) > 1 {
		vis = t[1]
	}
	if vis != "open" && vis != "private" {
		return reject("invalid visibility: " + vis), nil
	}
	typ := "stream"
	if t := ev.Tag("channel_type"); len(t) > 1 {
		typ = t[1]
	}
	switch typ {
	case "stream", "forum", "dm", "workflow":
	default:
		return reject("invalid channel_type: " + typ), nil
	}
	ch := &channel{
		id: chID, name: name, about: ev.TagValue("about"), typ: typ, visibility: vis,
		creator: ev.PubKey, createdAt: ev.CreatedAt,
		members: map[string]string{ev.PubKey: "owner"},
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	// Exists, store, then the channel, under the community's creation
	// lock: the same 9007 twice stores once and creates once (D7).
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if _, exists := c.channels.Load(chID); exists {
		if _, again := c.store().Lookup(ev.ID); again {
			return accept("duplicate:"), nil // this very event, twice at once
		}
		return reject("duplicate: channel already exists"), nil
	}
	if res, ok := cm.commit(); !ok {
		return res, nil
	}
	c.channels.Store(chID, ch)
	// handle_create_group: the channel_created system message, the group
	// state, then the creator's member-added notice.
	out := c.systemMessage(chID, map[string]string{"type": "channel_created", "actor": ev.PubKey})
	out = append(out, c.publishGroupState(ch)...)
	if e := c.notice(nostr.KindMemberAdded, chID, ev.PubKey, ev.PubKey); e != nil {
		out = append(out, e)
	}
	return accept(""), out
}

// systemMessage stores and returns a relay-signed kind-40099 system message
// in chID, as Buzz's emit_system_message (handlers/side_effects.rs): content
// is the JSON object of fields (keys in serde_json's sorted order), the only
// tag is h. They are rows of the desktop's window pages.
func (c *community) systemMessage(chID string, fields map[string]string) []*entry {
	content, _ := json.Marshal(fields) // map keys marshal sorted
	e := c.relay.signRelay(nostr.KindSystemMessage, [][]string{{"h", chID}}, string(content), timeZero)
	if e == nil {
		return nil
	}
	res := c.store().Add(e)
	if res.Status != store.Stored {
		return nil
	}
	return []*entry{newEntry(e, res.Channel)}
}

// notice stores a relay-signed membership notice (44100/44101): p-gated,
// tagged h and p.
// Tags and content follow Buzz's emit_membership_notification: p then h,
// content {"actor","channel_id","type"}. A same-second repeat has the same id
// and is not stored again (Buzz skips the fan-out of a duplicate insert).
func (c *community) notice(kind int, chID, pk, actor string) *entry {
	typ := "member_added"
	if kind == nostr.KindMemberRemoved {
		typ = "member_removed"
	}
	content, _ := json.Marshal(map[string]string{"type": typ, "channel_id": chID, "actor": actor})
	e := c.relay.signRelay(kind, [][]string{{"p", pk}, {"h", chID}}, string(content), timeZero)
	if e == nil {
		return nil
	}
	if c.store().Add(e).Status != store.Stored {
		return nil
	}
	en := newEntry(e, "")
	en.noticeChannel = chID
	return en
}

// membership handles 9000, 9001, 9002, 9008, 9021 and 9022.
func (r *Relay) membership(c *community, ev *nostr.Event, chID string, cm *committer) (ingestResult, []*entry) {
	ch := c.channel(chID)
	if ch == nil {
		return reject("invalid: channel not found"), nil
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.deleted {
		return reject("invalid: channel not found"), nil
	}
	actorRole := ch.members[ev.PubKey]
	admin := actorRole == "owner" || actorRole == "admin"
	var sys []*entry // 40099 system messages, written before the group state
	var notices []struct {
		kind int
		pk   string
	}
	switch ev.Kind {
	case nostr.KindPutUser:
		// Buzz applies one member per 9000: the target is the first VALID
		// p tag (extract_p_tag skips a value that is not 32 bytes of hex and
		// takes the next), the role a separate ["role", r] tag, one with no
		// value counting as absent (extract_tag_value: None)
		// (validate_admin_event / handle_put_user in handlers/side_effects.rs;
		// buzz-contract.md rows 2 and 3). Other p tags are ignored and the
		// event is still accepted.
		target := ""
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "p" && hex64(t[1]) {
				target = strings.ToLower(t[1])
				break
			}
		}
		if target == "" {
			return reject("invalid: missing p tag"), nil
		}
		role, hasRole := "", false
		if t := ev.Tag("role"); len(t) >= 2 {
			hasRole, role = true, t[1]
			if !memberRoles[role] {
				return reject("invalid: invalid role: " + role), nil
			}
		}
		if reason := r.faults.refusedMember(target); reason == ignoredMember {
			res, _ := cm.commit() // stored, no member added
			return res, nil
		} else if reason != "" {
			return reject(reason), nil
		}
		current, isMember := ch.members[target]
		if ch.visibility == "private" && target != ev.PubKey && !admin {
			return reject("invalid: only owners/admins may add private-channel members"), nil
		}
		if isMember && hasRole && role != current {
			if !admin {
				return reject("invalid: only owners/admins may change an active member's role"), nil
			}
			if current == "owner" && role != "owner" && ch.owners() <= 1 {
				return reject("invalid: cannot demote the last owner — transfer ownership first"), nil
			}
		}
		if !hasRole {
			role = current // no role tag: keep an existing member's role
			if !isMember {
				role = "member"
			}
		}
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		ch.members[target] = role
		sys = c.systemMessage(chID, map[string]string{"type": "member_joined", "actor": ev.PubKey, "target": target})
		notices = append(notices, struct {
			kind int
			pk   string
		}{nostr.KindMemberAdded, target})
		if r.faults.everyPTag.Load() { // test switch: a relay that applies every p
			for _, t := range ev.Tags {
				if len(t) >= 2 && t[0] == "p" && t[1] != target && validPubKey(t[1]) {
					if _, ok := ch.members[t[1]]; !ok {
						ch.members[t[1]] = "member"
					}
				}
			}
		}
	case nostr.KindRemoveUser:
		pk := ev.TagValue("p")
		if pk == "" {
			return reject("invalid: remove-member events need a p tag"), nil
		}
		if !admin && pk != ev.PubKey {
			return reject("restricted: only channel owners and admins can remove members"), nil
		}
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		if _, ok := ch.members[pk]; ok {
			delete(ch.members, pk)
			typ := "member_removed"
			if pk == ev.PubKey {
				typ = "member_left"
			}
			sys = c.systemMessage(chID, map[string]string{"type": typ, "actor": ev.PubKey, "target": pk})
			notices = append(notices, struct {
				kind int
				pk   string
			}{nostr.KindMemberRemoved, pk})
		}
	case nostr.KindJoinRequest:
		if ch.visibility == "private" {
			return reject("restricted: channel is private"), nil
		}
		if ch.archived {
			return reject("invalid: channel is archived"), nil
		}
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		if _, ok := ch.members[ev.PubKey]; !ok {
			ch.members[ev.PubKey] = "member"
			sys = c.systemMessage(chID, map[string]string{"type": "member_joined", "actor": ev.PubKey, "target": ev.PubKey})
		}
	case nostr.KindLeaveRequest:
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		if _, ok := ch.members[ev.PubKey]; ok {
			delete(ch.members, ev.PubKey)
			sys = c.systemMessage(chID, map[string]string{"type": "member_left", "actor": ev.PubKey})
		}
	case nostr.KindEditMetadata:
		if !admin {
			return reject("restricted: only channel owners and admins can edit the channel"), nil
		}
		for _, t := range ev.Tags {
			if len(t) < 2 {
				continue
			}
			switch t[0] {
			case "name":
				if strings.TrimSpace(t[1]) == "" {
					return reject("invalid: channel name is required"), nil
				}
			case "visibility":
				if t[1] != "open" && t[1] != "private" {
					return reject("invalid visibility: " + t[1]), nil
				}
			}
		}
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		for _, t := range ev.Tags {
			if len(t) < 2 {
				continue
			}
			switch t[0] {
			case "name":
				ch.name = t[1]
			case "about":
				ch.about = t[1]
			case "visibility":
				ch.visibility = t[1]
			case "archived":
				ch.archived = t[1] == "true"
			}
		}
	case nostr.KindDeleteGroup:
		if actorRole != "owner" {
			return reject("restricted: only the channel owner can delete the channel"), nil
		}
		if res, ok := cm.commit(); !ok {
			return res, nil
		}
		ch.deleted = true
		ch.archived = true
	}
	if res, ok := cm.commit(); !ok { // a kind with no case above
		return res, nil
	}
	// Buzz's order: system message, group state, then the notices.
	extra := append(sys, c.publishGroupState(ch)...)
	for _, n := range notices {
		if e := c.notice(n.kind, chID, n.pk, ev.PubKey); e != nil {
			extra = append(extra, e)
		}
	}
	return accept(""), extra
}

// memberRoles are the roles a ["role", r] tag may name (buzz_db MemberRole).
var memberRoles = map[string]bool{"owner": true, "admin": true, "member": true, "guest": true, "bot": true}

// owners counts the channel's owners. Caller holds ch.mu.
func (ch *channel) owners() int {
	n := 0
	for _, r := range ch.members {
		if r == "owner" {
			n++
		}
	}
	return n
}
