package localrelay

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// community is one tenant: its own events, channels, members, presence,
// subscriptions, rate-limit buckets and NIP-98 replay cache (digest §3.1).
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

	mu          sync.RWMutex // guards everything below up to subs
	store       Store
	channels    map[string]*channel
	reactions   map[reactionKey]string      // -> reaction event id
	replaceable map[string]*Entry           // pubkey:kind[:d] -> current version
	threads     map[string]*threadStats     // root id -> summary
	presence    map[string]*presenceState   // pubkey -> status
	agentOwner  map[string]string           // agent pubkey -> owner (NIP-OA)
	readState   map[string]map[string]int64 // buzz/v1: pubkey -> context -> through created_at
	auxByTarget map[string][]*Entry         // target id -> reactions, deletions, edits
	replies     map[string][]*Entry         // thread root id -> replies, oldest first

	subs   subIndex
	limits *limiter
	replay *replayCache

	connMu sync.Mutex
	conns  map[*conn]struct{}
}

type reactionKey struct{ author, target, content string }

type channel struct {
	id          string
	name        string
	about       string
	typ         string
	visibility  string // open | private
	creator     string
	createdAt   int64
	archived    bool
	deleted     bool
	members     map[string]string // pubkey -> role
	lastMessage *Entry            // newest eligible top-level message (buzz/v1)
}

type threadStats struct {
	replies      int // direct replies to the root
	descendants  int
	lastReplyAt  int64
	participants []string // newest first, unique, at most 10
}

type presenceState struct {
	status string
	conns  int
}

func (r *Relay) newCommunity(host, owner string, deployment bool) *community {
	return &community{
		relay: r, id: newUUID(), host: host, owner: owner, deployment: deployment,
		createdAt: time.Now().Unix(),
		store:     newMemStore(), channels: map[string]*channel{}, reactions: map[reactionKey]string{},
		replaceable: map[string]*Entry{}, threads: map[string]*threadStats{},
		presence: map[string]*presenceState{}, agentOwner: map[string]string{},
		readState:   map[string]map[string]int64{},
		auxByTarget: map[string][]*Entry{}, replies: map[string][]*Entry{},
		subs:   newSubIndex(),
		limits: newLimiter(&r.cfg),
		replay: newReplayCache(r.cfg.ReplayWindow),
		conns:  map[*conn]struct{}{},
	}
}

// createCommunity maps host (already normalised). It returns the existing
// community when the host is mapped; an error when it is tombstoned.
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

// canRead reports whether pubkey may read channel id: open channels are
// readable by everyone in the community, private ones by members only.
// Unknown channels hold nothing, so reading them is allowed (and empty).
// Caller holds c.mu (read).
func (c *community) canRead(chID, pubkey string) bool {
	ch := c.channels[chID]
	if ch == nil || ch.visibility != "private" {
		return true
	}
	_, ok := ch.members[pubkey]
	return ok
}

// visible reports whether reader may see e (channel access, p-gating,
// author-only kinds, deletion). Caller holds c.mu (read).
func (c *community) visible(e *Entry, reader string) bool {
	if e.Deleted {
		return false
	}
	if e.Channel != "" && !c.canRead(e.Channel, reader) {
		return false
	}
	k := e.Event.Kind
	if pGatedKinds[k] && !taggedP(e.Event, reader) && e.Event.PubKey != reader {
		return false
	}
	if authorOnlyKinds[k] && e.Event.PubKey != reader {
		return false
	}
	if k == kindEngram && e.Event.PubKey != reader && !taggedP(e.Event, reader) {
		return false
	}
	return true
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

// signRelay builds and signs a relay event; failures cannot happen with a
// valid key, so they are reported as nil.
func (r *Relay) signRelay(kind int, tags [][]string, content string) *nostr.Event {
	e, err := r.relayKeys.NewEvent(kind, tags, content, time.Now())
	if err != nil {
		r.logf("localrelay: sign relay event: %v", err)
		return nil
	}
	return e
}

func newEntry(e *nostr.Event, channel string) *Entry {
	return &Entry{Event: e, JSON: e.AppendJSON(make([]byte, 0, 256+len(e.Content))), Channel: channel}
}

// groupEvents returns fresh 39000 (metadata) and 39002 (members) events for
// ch. They carry `d` and `h` = channel so channel-scoped subscriptions (the
// desktop app's lists 39000 and 39002) receive them. Caller holds c.mu.
func (c *community) groupEvents(ch *channel) []*nostr.Event {
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
	pks := make([]string, 0, len(ch.members))
	for pk := range ch.members {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	for _, pk := range pks {
		members = append(members, []string{"p", pk, "", ch.members[pk]})
	}
	var out []*nostr.Event
	for _, x := range []struct {
		kind int
		tags [][]string
	}{{39000, meta}, {39002, members}} {
		if e := c.relay.signRelay(x.kind, x.tags, ""); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// storeReplaceable stores e as the current version of its replaceable or
// addressable coordinate (force: the relay's own state always replaces,
// even within the same second). It reports false (and stores nothing) when a newer
// version exists. Caller holds c.mu (write).
func (c *community) storeReplaceable(en *Entry, force bool) bool {
	key := replaceKey(en.Event)
	old := c.replaceable[key]
	if old != nil && (old.Event.ID == en.Event.ID || !force && !before(en, old)) {
		return false // the same event, or not newer: keep the current one
	}
	if !c.store.Add(en) {
		// The same content signed in the same second as an earlier,
		// replaced version has that version's id: bring it back.
		prev := c.store.Get(en.Event.ID)
		if !force || prev == nil || !prev.Deleted {
			return false
		}
		prev.Deleted = false
		*en = *prev
		en = prev
	}
	if old != nil {
		old.Deleted = true
	}
	c.replaceable[key] = en
	return true
}

func replaceKey(e *nostr.Event) string {
	if isAddressable(e.Kind) {
		return fmt.Sprintf("%s:%d:%s", e.PubKey, e.Kind, e.TagValue("d"))
	}
	return fmt.Sprintf("%s:%d", e.PubKey, e.Kind)
}

func isReplaceable(k int) bool { return k == 0 || k == 3 || k >= 10000 && k < 20000 }
func isAddressable(k int) bool { return k >= 30000 && k < 40000 }
func isEphemeral(k int) bool   { return k >= 20000 && k < 30000 }

// ---- presence (WS only, in memory) ----

func (c *community) presenceConnOpened(pk string) {
	c.mu.Lock()
	p := c.presence[pk]
	if p == nil {
		p = &presenceState{status: "offline"}
		c.presence[pk] = p
	}
	p.conns++
	c.mu.Unlock()
}

// presenceConnClosed marks pk offline when its last connection closes.
func (c *community) presenceConnClosed(pk string) {
	c.mu.Lock()
	if p := c.presence[pk]; p != nil {
		p.conns--
		if p.conns <= 0 {
			p.conns = 0
			p.status = "offline"
		}
	}
	c.mu.Unlock()
}

func (c *community) presenceOf(pk string) string {
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
