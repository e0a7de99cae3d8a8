package relay

import (
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// maxAddMembers caps p tags in one kind-9000 (the generator sends ≤ 100).
const maxAddMembers = 100

// createChannel handles kind 9007 (docs/buzz-protocol.md §4.6).
func (c *community) createChannel(ev *nostr.Event, chID string) (ingestResult, []*entry) {
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
	if _, loaded := c.channels.LoadOrStore(chID, ch); loaded {
		return reject("duplicate: channel already exists"), nil
	}
	return accept(""), c.publishGroupState(ch)
}

// notice stores a relay-signed membership notice (44100/44101): p-gated,
// tagged h and p.
func (c *community) notice(kind int, chID, pk string) *entry {
	e := c.relay.signRelay(kind, [][]string{{"h", chID}, {"p", pk}}, "", timeZero)
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
func (r *Relay) membership(c *community, ev *nostr.Event, chID string) (ingestResult, []*entry) {
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
	var notices []struct {
		kind int
		pk   string
	}
	switch ev.Kind {
	case nostr.KindPutUser:
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
			if !validPubKey(t[1]) {
				return rejectf("invalid: p tag %q is not a public key", trimDetail(t[1])), nil
			}
			if reason := r.faults.refusedMember(t[1]); reason != "" {
				return reject(reason), nil
			}
			if len(t) >= 3 && t[2] == "owner" && actorRole != "owner" {
				return reject("restricted: only the channel owner can add owners"), nil
			}
		}
		for _, t := range ps {
			role := "member"
			if len(t) >= 3 && t[2] != "" {
				role = t[2]
			}
			_, already := ch.members[t[1]]
			ch.members[t[1]] = role
			if !already {
				notices = append(notices, struct {
					kind int
					pk   string
				}{nostr.KindMemberAdded, t[1]})
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
		if _, ok := ch.members[pk]; ok {
			delete(ch.members, pk)
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
		if _, ok := ch.members[ev.PubKey]; !ok {
			ch.members[ev.PubKey] = "member"
		}
	case nostr.KindLeaveRequest:
		delete(ch.members, ev.PubKey)
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
		ch.deleted = true
		ch.archived = true
	}
	var extra []*entry
	for _, n := range notices {
		if e := c.notice(n.kind, chID, n.pk); e != nil {
			extra = append(extra, e)
		}
	}
	return accept(""), append(extra, c.publishGroupState(ch)...)
}
