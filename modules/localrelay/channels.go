package localrelay

import (
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// maxAddMembers caps p tags in one kind-9000 (the generator sends ≤ 100).
const maxAddMembers = 100

// createChannel handles kind 9007 (digest §4.6). Caller holds c.mu.
func (c *community) createChannel(ev *nostr.Event, chID string) (ingestResult, []*Entry) {
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
	if _, exists := c.channels[chID]; exists {
		return reject("duplicate: channel already exists"), nil
	}
	ch := &channel{
		id: chID, name: name, about: ev.TagValue("about"), typ: typ, visibility: vis,
		creator: ev.PubKey, createdAt: ev.CreatedAt,
		members: map[string]string{ev.PubKey: "owner"},
	}
	c.channels[chID] = ch
	return accept(""), c.publishGroupState(ch)
}

// publishGroupState stores fresh 39000/39002 and returns them for fan-out.
func (c *community) publishGroupState(ch *channel) []*Entry {
	var out []*Entry
	for _, e := range c.groupEvents(ch) {
		en := newEntry(e, ch.id)
		if c.storeReplaceable(en, true) {
			out = append(out, en)
		}
	}
	return out
}

// notice stores a relay-signed membership notice (44100/44101): p-gated,
// tagged h and p. It is a global event (so `#p:[self]` subscriptions
// without #h receive it live) that is also delivered to the channel's
// subscriptions.
func (c *community) notice(kind int, chID, pk string) *Entry {
	e := c.relay.signRelay(kind, [][]string{{"h", chID}, {"p", pk}}, "")
	if e == nil {
		return nil
	}
	en := newEntry(e, "")
	en.noticeChannel = chID
	c.store.Add(en)
	return en
}

// membership handles 9000, 9001, 9002, 9008, 9021 and 9022. Caller holds c.mu.
func (r *Relay) membership(c *community, ev *nostr.Event, chID string) (ingestResult, []*Entry) {
	ch := c.channels[chID]
	if ch == nil || ch.deleted {
		return reject("invalid: channel not found"), nil
	}
	actorRole := ch.members[ev.PubKey]
	admin := actorRole == "owner" || actorRole == "admin"
	var extra []*Entry
	switch ev.Kind {
	case kindAddUser:
		var ps [][]string
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "p" {
				ps = append(ps, t)
			}
		}
		if len(ps) == 0 {
			return reject("invalid: add-member events need at least one p tag"), nil
		}
		if len(ps) > maxAddMembers {
			return rejectf("invalid: too many p tags (got %d, limit %d)", len(ps), maxAddMembers), nil
		}
		if !admin {
			return reject("restricted: only channel owners and admins can add members"), nil
		}
		for _, t := range ps {
			if _, err := nostr.ParsePubKey(t[1]); err != nil {
				return rejectf("invalid: p tag %q is not a public key", trimDetail(t[1])), nil
			}
			if reason := r.faults.refusedMember(t[1]); reason != "" {
				return reject(reason), nil
			}
		}
		for _, t := range ps {
			role := "member"
			if len(t) >= 3 && t[2] != "" {
				role = t[2]
			}
			if role == "owner" && actorRole != "owner" {
				return reject("restricted: only the channel owner can add owners"), nil
			}
			_, already := ch.members[t[1]]
			ch.members[t[1]] = role
			if !already {
				if n := c.notice(kindMemberAdded, chID, t[1]); n != nil {
					extra = append(extra, n)
				}
			}
		}
	case kindRemoveUser:
		pk := ev.TagValue("p")
		if pk == "" {
			return reject("invalid: remove-member events need a p tag"), nil
		}
		if !admin && pk != ev.PubKey {
			return reject("restricted: only channel owners and admins can remove members"), nil
		}
		if _, ok := ch.members[pk]; ok {
			delete(ch.members, pk)
			if n := c.notice(kindMemberRemove, chID, pk); n != nil {
				extra = append(extra, n)
			}
		}
	case kindJoin:
		if ch.visibility == "private" {
			return reject("restricted: channel is private"), nil
		}
		if ch.archived {
			return reject("invalid: channel is archived"), nil
		}
		if _, ok := ch.members[ev.PubKey]; !ok {
			ch.members[ev.PubKey] = "member"
		}
	case kindLeave:
		delete(ch.members, ev.PubKey)
	case kindEditMeta:
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
				ch.name = t[1]
			case "about":
				ch.about = t[1]
			case "visibility":
				if t[1] != "open" && t[1] != "private" {
					return reject("invalid visibility: " + t[1]), nil
				}
				ch.visibility = t[1]
			case "archived":
				ch.archived = t[1] == "true"
			}
		}
	case kindDeleteGroup:
		if actorRole != "owner" {
			return reject("restricted: only the channel owner can delete the channel"), nil
		}
		ch.deleted = true
		ch.archived = true
	default:
		return reject(fmt.Sprintf("restricted: unknown event kind")), nil
	}
	return accept(""), append(extra, c.publishGroupState(ch)...)
}
