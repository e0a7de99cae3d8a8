package relay

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// roster is a community's NIP-43 relay-member table (Buzz's relay_members):
// pubkey → owner | admin | member. Provisioning bootstraps the owner
// (handlers/community_provisioning.rs bootstrap_owner); kinds 9030/9031 add
// and remove members (handlers/relay_admin.rs). The table exists in every
// mode; Config.RequireRelayMembership decides whether it gates AUTH and
// the HTTP bridge (BUZZ_REQUIRE_RELAY_MEMBERSHIP).
type roster struct {
	mu       sync.Mutex
	roles    map[string]string
	listedAt int64 // created_at of the last 13534: the next one is dated after it
}

// nextListAt is the created_at of a new 13534: now, or one second after the
// last one, so a burst of changes in one second replaces it each time (the
// store keeps the lowest id of a same-second tie).
func (ro *roster) nextListAt() time.Time {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	at := time.Now().Unix()
	if at <= ro.listedAt {
		at = ro.listedAt + 1
	}
	ro.listedAt = at
	return time.Unix(at, 0)
}

func (ro *roster) role(pk string) string {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.roles[pk]
}

func (ro *roster) set(pk, role string) bool {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.roles == nil {
		ro.roles = map[string]string{}
	}
	if _, ok := ro.roles[pk]; ok {
		return false
	}
	ro.roles[pk] = role
	return true
}

// promote makes pk the owner, demoting a previous owner to admin (an owner
// rotation through bootstrap_owner).
func (ro *roster) promote(pk string) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.roles == nil {
		ro.roles = map[string]string{}
	}
	for k, r := range ro.roles {
		if r == "owner" {
			ro.roles[k] = "admin"
		}
	}
	ro.roles[pk] = "owner"
}

func (ro *roster) remove(pk string) bool {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	_, ok := ro.roles[pk]
	delete(ro.roles, pk)
	return ok
}

func (ro *roster) members() []string {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	out := make([]string, 0, len(ro.roles))
	for pk := range ro.roles {
		out = append(out, pk)
	}
	sort.Strings(out)
	return out
}

// admitted reports whether pk may use the community: always on an open
// relay; on a closed one when pk is a member or its NIP-OA owner is
// (enforce_relay_membership's owner-delegation fallback).
func (c *community) admitted(pk, oaOwner string) bool {
	if !c.relay.cfg.RequireRelayMembership {
		return true
	}
	return c.roster.role(pk) != "" || oaOwner != "" && c.roster.role(oaOwner) != ""
}

// writeMembershipRequired is the bridge's 403 for a non-member.
func writeMembershipRequired(w http.ResponseWriter) {
	writeJSON(w, http.StatusForbidden, map[string]string{
		"error": "relay_membership_required", "message": "You must be a relay member to access this relay",
	})
}

// relayAdmin handles kinds 9030 (add) and 9031 (remove) as Buzz's
// relay_admin.rs: not stored as events; the sender must be an owner or
// admin; the target is the first p tag; 9030 takes ["role", admin|member]
// (member when absent; only the owner grants admin; owners come from 9032)
// and leaves an existing member's role alone; created_at within ±120 s.
// A change publishes the relay-signed NIP-43 8000/8001 and 13534.
func (r *Relay) relayAdmin(c *community, ev *nostr.Event) ingestResult {
	if d := ev.CreatedAt - time.Now().Unix(); d > 120 || d < -120 {
		return reject("invalid: event timestamp out of range (max ±120s)")
	}
	sender := c.roster.role(ev.PubKey)
	target := ""
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && isHexLen(t[1], 64) {
			target = t[1]
			break
		}
	}
	if target == "" {
		return reject("invalid: missing or invalid p tag")
	}
	if sender != "admin" && sender != "owner" {
		return reject("invalid: actor not authorized: must be admin or owner")
	}
	changed := false
	kind := nostr.KindMemberAddedNotice
	switch ev.Kind {
	case nostr.KindRelayAddMember:
		role := "member"
		if t := ev.Tag("role"); len(t) >= 2 {
			role = t[1]
		}
		switch {
		case role == "owner":
			return reject("invalid: invalid role: use kind:9032 to promote to owner")
		case role == "admin" && sender != "owner":
			return reject("invalid: actor not authorized: only owner can grant admin role")
		case role != "admin" && role != "member":
			return reject("invalid: invalid role: " + role)
		}
		changed = c.roster.set(target, role)
	case nostr.KindRelayRemoveMember:
		if c.roster.role(target) == "owner" {
			return reject("invalid: cannot remove the relay owner")
		}
		changed = c.roster.remove(target)
		kind = nostr.KindMemberRemovedNotice
	}
	if changed {
		for _, e := range r.nip43Events(c, kind, target) {
			c.fanout(e)
		}
	}
	return accept("")
}

// nip43Events stores the relay-signed 8000/8001 for target and the current
// 13534 membership list (both carry NIP-70's ["-"]).
func (r *Relay) nip43Events(c *community, kind int, target string) []*entry {
	var out []*entry
	if e := r.signRelay(kind, [][]string{{"-"}, {"p", target}}, "", timeZero); e != nil {
		if res := c.store().Add(e); res.Status == store.Stored {
			out = append(out, newEntry(e, res.Channel))
		}
	}
	tags := [][]string{{"-"}}
	for _, pk := range c.roster.members() {
		tags = append(tags, []string{"member", pk})
	}
	if e := r.signRelay(nostr.KindMembershipList, tags, "", c.roster.nextListAt()); e != nil {
		if res := c.store().Add(e); res.Status == store.Stored {
			out = append(out, newEntry(e, res.Channel))
		}
	}
	return out
}

// AllowPubkeys adds hex pubkeys to the allowlist Config.PubkeyAllowlist
// enforces (Buzz's pubkey_allowlist table); one that is not a valid pubkey
// is an error naming it.
func (r *Relay) AllowPubkeys(pks ...string) error {
	r.allowMu.Lock()
	defer r.allowMu.Unlock()
	if r.allowlist == nil {
		r.allowlist = map[string]bool{}
	}
	for _, pk := range pks {
		if !validPubKey(pk) {
			return fmt.Errorf("allowlist: %q is not a 64-hex-digit lowercase pubkey", pk)
		}
		r.allowlist[pk] = true
	}
	return nil
}

// allowed is the allowlist gate of handlers/auth.rs: it applies to a
// pubkey-only AUTH (an agent's NIP-OA AUTH is judged by its owner, as
// Buzz's gate is on pubkey-only NIP-42).
func (r *Relay) allowed(pk, oaOwner string) bool {
	if !r.cfg.PubkeyAllowlist || oaOwner != "" {
		return true
	}
	r.allowMu.RLock()
	defer r.allowMu.RUnlock()
	return r.allowlist[pk]
}

// AllowlistOn says whether AUTH is gated by the allowlist.
func (r *Relay) AllowlistOn() bool { return r.cfg.PubkeyAllowlist }
