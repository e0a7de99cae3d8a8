package relay

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// community is one tenant: its own events, channels, members, presence,
// subscriptions, rate-limit buckets and NIP-98 replay cache (docs/buzz-protocol.md §3.1).
//
// Locking: the event store locks itself (per channel partition); each
// channel has its own lock; nothing on the publish or fan-out path takes a
// community-wide write lock. mu only serialises channel creation.
type community struct {
	relay      *Relay
	id         string
	host       string
	deployment bool
	createdAt  int64

	// Lifecycle fields are guarded by relay.mu.
	owner      string
	archivedAt int64
	deletion   *deletionRequest

	st atomic.Pointer[store.Store]

	// channels: id -> *channel, never removed. createMu serialises channel
	// creation (channels.go createChannel: exists, store, then the channel).
	channels sync.Map
	createMu sync.Mutex

	presMu   sync.Mutex
	presence map[string]*presenceState // pubkey -> status

	agentOwner sync.Map // agent pubkey -> owner pubkey (NIP-OA, from AUTH)
	roster     roster   // NIP-43 relay members (relaymembers.go)

	reads atomic.Pointer[readState] // /buzz/v1 read state, created on first use

	subs   subIndex
	limits *limiter
	replay *replayCache

	connMu sync.Mutex
	conns  map[*conn]struct{}
}

type channel struct {
	id        string
	creator   string
	createdAt int64

	mu         sync.RWMutex // guards the fields below
	name       string
	about      string
	typ        string
	visibility string // open | private
	archived   bool
	deleted    bool
	members    map[string]string    // pubkey -> role
	lastState  map[int]*nostr.Event // the current 39000 / 39001 / 39002
}

type presenceState struct {
	status string
	conns  int
}

func (r *Relay) newCommunity(host, owner string, deployment bool) *community {
	c := &community{
		relay: r, id: newUUID(), host: host, owner: owner, deployment: deployment,
		createdAt: time.Now().Unix(),
		presence:  map[string]*presenceState{},
		subs:      newSubIndex(),
		limits:    newLimiter(&r.cfg),
		replay:    newReplayCache(r.cfg.ReplayWindow),
		conns:     map[*conn]struct{}{},
	}
	c.st.Store(r.newStore())
	if owner != "" {
		c.roster.promote(owner) // provisioning bootstraps the owner as a relay member
	}
	return c
}

func (r *Relay) newStore() *store.Store {
	return store.New(store.Config{MaxEvents: r.cfg.MaxEventsPerCommunity, MaxLimit: r.cfg.MaxHistoricalLimit})
}

func (c *community) store() *store.Store {
	c.relay.slowStore()
	return c.st.Load()
}

// createCommunity maps host (already normalised), or returns the existing one.
func (r *Relay) createCommunity(host, owner string, deployment bool) (*community, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.comms[host]; ok {
		return c, nil
	}
	c := r.newCommunity(host, owner, deployment)
	r.comms[host] = c
	if deployment {
		r.deployHost = host
	}
	return c, nil
}

// active is false once archived or deleted.
func (c *community) active() bool {
	c.relay.mu.RLock()
	defer c.relay.mu.RUnlock()
	return c.archivedAt == 0 && c.deletion == nil
}

func (c *community) addConn(k *conn) {
	c.connMu.Lock()
	c.conns[k] = struct{}{}
	c.connMu.Unlock()
}

func (c *community) removeConn(k *conn) {
	c.connMu.Lock()
	delete(c.conns, k)
	c.connMu.Unlock()
}

// closeAll closes every live socket of the community with a close frame.
func (c *community) closeAll(code int, reason string) {
	c.connMu.Lock()
	list := make([]*conn, 0, len(c.conns))
	for k := range c.conns {
		list = append(list, k)
	}
	c.connMu.Unlock()
	for _, k := range list {
		k.closeWith(code, reason)
	}
}

func (c *community) channel(id string) *channel {
	if v, ok := c.channels.Load(id); ok {
		return v.(*channel)
	}
	return nil
}

// canRead reports whether pubkey may read channel chID: open channels are
// readable by everyone in the community, private ones by members only.
// Unknown channels hold nothing of a private channel, so reading them is
// allowed (and empty). It takes only the channel's read lock, so the store
// may call it under its partition locks.
func (c *community) canRead(chID, pubkey string) bool {
	if chID == "" {
		return true
	}
	ch := c.channel(chID)
	if ch == nil {
		return true
	}
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	if ch.visibility != "private" {
		return true
	}
	_, ok := ch.members[pubkey]
	return ok
}

// isPrivate reports whether chID is a private channel, whose readers are
// its members only (canRead).
func (c *community) isPrivate(chID string) bool {
	ch := c.channel(chID)
	if ch == nil {
		return false
	}
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	return ch.visibility == "private"
}

// readerGated reports whether eventVisible depends on the reader for e's
// kind; for every other kind it is true for all readers.
func readerGated(e *nostr.Event) bool {
	k := e.Kind
	return pGatedKinds[k] || authorOnlyKinds[k] || k == nostr.KindAgentEngram
}

// eventVisible applies the event-level gates: p-gated kinds only to the
// tagged recipient (or the author), author-only kinds and engrams to their
// author. Pure: safe under any lock.
func eventVisible(e *nostr.Event, reader string) bool {
	k := e.Kind
	if pGatedKinds[k] && e.PubKey != reader && !taggedP(e, reader) {
		return false
	}
	if authorOnlyKinds[k] && e.PubKey != reader {
		return false
	}
	if k == nostr.KindAgentEngram && e.PubKey != reader && !taggedP(e, reader) {
		return false
	}
	return true
}

// reader builds the store's view of who reads.
func (c *community) reader(pubkey string) store.Reader {
	return store.Reader{
		CanRead: func(ch string) bool { return c.canRead(ch, pubkey) },
		Visible: func(ev *nostr.Event, _ string) bool { return eventVisible(ev, pubkey) },
		Pubkey:  pubkey,
		Host:    c.host,
		Signer:  c.relay.relayKeys,

		ThreadRepliesInChannel: c.relay.cfg.ThreadRepliesInChannel,
	}
}

func taggedP(e *nostr.Event, pk string) bool {
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == "p" && t[1] == pk {
			return true
		}
	}
	return false
}

// ---- relay-signed events ----

// signRelay builds and signs a relay event at time at (zero: now).
func (r *Relay) signRelay(kind int, tags [][]string, content string, at time.Time) *nostr.Event {
	if at.IsZero() {
		at = time.Now()
	}
	e, err := r.relayKeys.NewEvent(kind, tags, content, at)
	if err != nil {
		r.logf("ERROR relay: sign relay event: %v", err)
		return nil
	}
	return e
}

// groupState returns the tags of ch's 39000 (metadata) and 39002 (members).
// Both carry `d` and `h` = channel so channel-scoped subscriptions (the
// desktop app lists 39000 and 39002 among its channel kinds) receive them.
// Caller holds ch.mu.
func (ch *channel) groupState() map[int][][]string {
	meta := [][]string{{"d", ch.id}, {"h", ch.id}, {"name", ch.name}}
	if ch.about != "" {
		meta = append(meta, []string{"about", ch.about})
	}
	meta = append(meta, []string{"t", ch.typ}, []string{"P", ch.creator},
		[]string{"created_at", fmt.Sprint(ch.createdAt)})
	if ch.visibility == "private" {
		meta = append(meta, []string{"private"}, []string{"closed"})
	} else {
		meta = append(meta, []string{"public"}, []string{"open"})
	}
	if ch.archived {
		meta = append(meta, []string{"archived", "true"})
	}
	members := [][]string{{"d", ch.id}, {"h", ch.id}}
	admins := [][]string{{"d", ch.id}, {"h", ch.id}}
	pks := make([]string, 0, len(ch.members))
	for pk := range ch.members {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	for _, pk := range pks {
		role := ch.members[pk]
		members = append(members, []string{"p", pk, "", role})
		if role == "owner" || role == "admin" {
			admins = append(admins, []string{"p", pk, role})
		}
	}
	return map[int][][]string{nostr.KindGroupMetadata: meta, nostr.KindGroupAdmins: admins, nostr.KindGroupMembers: members}
}

// groupStateKinds are emitted in emit_group_discovery_events' order.
var groupStateKinds = [...]int{nostr.KindGroupMetadata, nostr.KindGroupAdmins, nostr.KindGroupMembers}

// publishGroupState signs, stores and returns the channel's 39000, 39001
// and 39002, every time, changed or not: Buzz's emit_group_discovery_events
// (handlers/side_effects.rs, newest version read 2026-12-06; every 9000,
// 9001, create, edit and join calls it) re-signs and replaces all three on
// each call, so a seed costs here the three signatures and writes it costs
// on Buzz (issue 41 item 5). A new version is dated max(now, previous+1),
// as Buzz's emit_addressable_discovery_event dates it; under a burst of
// membership changes the dates may run a few seconds ahead of the clock.
// Caller holds ch.mu (write).
func (c *community) publishGroupState(ch *channel) []*entry {
	var out []*entry
	state := ch.groupState()
	for _, kind := range groupStateKinds {
		tags := state[kind]
		prev := ch.lastState[kind]
		at := time.Now()
		if prev != nil && at.Unix() <= prev.CreatedAt {
			at = time.Unix(prev.CreatedAt+1, 0)
		}
		e := c.relay.signRelay(kind, tags, "", at)
		if e == nil {
			continue
		}
		res := c.store().Add(e)
		if res.Status != store.Stored {
			c.relay.logf("ERROR relay: group state %d for %s not stored: %v", kind, ch.id, res.Status)
			continue
		}
		if ch.lastState == nil {
			ch.lastState = map[int]*nostr.Event{}
		}
		ch.lastState[kind] = e
		out = append(out, newEntry(e, res.Channel))
	}
	return out
}

func isEphemeral(k int) bool { return k >= 20000 && k < 30000 }

// ---- presence (WS only, in memory) ----

func (c *community) presenceConnOpened(pk string) {
	c.presMu.Lock()
	p := c.presence[pk]
	if p == nil {
		p = &presenceState{status: "offline"}
		c.presence[pk] = p
	}
	p.conns++
	c.presMu.Unlock()
}

// presenceConnClosed marks pk offline when its last connection closes.
func (c *community) presenceConnClosed(pk string) {
	c.presMu.Lock()
	if p := c.presence[pk]; p != nil {
		p.conns--
		if p.conns <= 0 {
			p.conns = 0
			p.status = "offline"
		}
	}
	c.presMu.Unlock()
}

func (c *community) setPresence(pk, status string) {
	c.presMu.Lock()
	p := c.presence[pk]
	if p == nil {
		p = &presenceState{}
		c.presence[pk] = p
	}
	p.status = status
	c.presMu.Unlock()
}

func (c *community) presenceOf(pk string) string {
	c.presMu.Lock()
	defer c.presMu.Unlock()
	if p := c.presence[pk]; p != nil {
		return p.status
	}
	return "offline"
}

// jsonString quotes s for hand-built JSON.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// timeZero asks signRelay for the current time.
var timeZero time.Time
