package seed

import (
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Seeded content. Every slot of a channel has its own text, so a rerun can
// recognise what is already there. The thread and hot roots are
// scenario.ThreadRootContent and scenario.HotRootContent: they carry the
// marker words the clients search for.

func chName(ch scenario.Channel) string {
	return strconv.Itoa(ch.Community) + "/" + strconv.Itoa(ch.Index)
}

// HistoryContent is the content of history message j of ch.
func HistoryContent(ch scenario.Channel, j int) string {
	return "history " + strconv.Itoa(j) + " of channel " + chName(ch)
}

// ReplyContent is the content of reply k (1-based) of thread t of ch.
func ReplyContent(ch scenario.Channel, t, k int) string {
	return "reply " + strconv.Itoa(k) + " of thread " + strconv.Itoa(t) + " of channel " + chName(ch)
}

// HotReplyContent is the content of seeded hot-thread reply k.
func HotReplyContent(k int) string { return "hot reply " + strconv.Itoa(k) }

// author is who signs a post: a client of the run (g ≥ 0) or, g = -1, the
// community's fixture owner.
type author struct {
	g    int
	keys *nostr.Keys
	oa   []string // NIP-OA tag for agents
}

// identities derives and caches the keys seed needs: each derivation is a
// hash and a scalar multiplication.
type identities struct {
	sc     *scenario.Scenario
	mu     sync.Mutex
	keys   map[int]*author
	owners map[int]*author
}

func newIdentities(sc *scenario.Scenario) *identities {
	return &identities{sc: sc, keys: map[int]*author{}, owners: map[int]*author{}}
}

func (id *identities) owner(c int) *author {
	id.mu.Lock()
	defer id.mu.Unlock()
	a := id.owners[c]
	if a == nil {
		a = &author{g: -1, keys: id.sc.OwnerKeys(c)}
		id.owners[c] = a
	}
	return a
}

func (id *identities) client(g int) (*author, error) {
	id.mu.Lock()
	a := id.keys[g]
	id.mu.Unlock()
	if a != nil {
		return a, nil
	}
	a = &author{g: g, keys: id.sc.Keys(g)}
	if ok := id.sc.AgentOwnerKeys(g); ok != nil {
		tag, err := nostr.AttestAgent(ok, a.keys.PubKey(), "")
		if err != nil {
			return nil, err
		}
		a.oa = tag
	}
	id.mu.Lock()
	if b := id.keys[g]; b != nil {
		a = b
	} else {
		id.keys[g] = a
	}
	id.mu.Unlock()
	return a, nil
}

// describe names global index g for messages: "human 7", "agent 2".
func describe(sc *scenario.Scenario, g int) string {
	if g < 0 {
		return "owner"
	}
	c, ok := sc.Client(g)
	if !ok {
		return "client " + strconv.Itoa(g)
	}
	return c.Kind.String() + " " + strconv.Itoa(c.Index)
}

// channelPlan is one channel's part of the seed.
type channelPlan struct {
	ch      scenario.Channel
	id      string
	private bool
	members []int // ChannelMemberList: who joins a private channel and who posts
	hot     []int // in the hot thread's channel: the hot-thread authors among members

	// Filled in as the seed goes.
	mu      sync.Mutex
	found   map[string]existing // seeded content already on the relay
	pending []int               // members missing before the members phase
	refused map[int]bool        // members whose kind-9000 the relay refused
}

type existing struct {
	id        string
	pubkey    string
	createdAt int64
}

// poster is the global index that posts content into the channel (-1: the
// owner): a member picked by a hash of the content, so the same slot has the
// same author whatever else the shape says, and a rerun finds it.
func (p *channelPlan) poster(content string) int {
	if len(p.members) == 0 {
		return -1
	}
	h := fnv.New32a()
	h.Write([]byte(content))
	return p.members[int(h.Sum32()%uint32(len(p.members)))]
}

// hotPoster is who posts the hot root (k = 0) and hot reply k: the hot
// authors round robin, else the channel's members, else the owner.
func (p *channelPlan) hotPoster(k int) int {
	if len(p.hot) > 0 {
		return p.hot[k%len(p.hot)]
	}
	if k == 0 {
		return p.poster(scenario.HotRootContent(""))
	}
	return p.poster(HotReplyContent(k))
}

func buildPlans(sc *scenario.Scenario) []*channelPlan {
	chs := sc.Channels()
	out := make([]*channelPlan, len(chs))
	hotCh := sc.HotThreadChannel()
	for i, ch := range chs {
		p := &channelPlan{ch: ch, id: sc.ChannelID(ch), private: sc.IsPrivate(ch)}
		p.members = sc.ChannelMemberList(ch)
		if ch == hotCh && sc.HotThreadEnabled() {
			for _, g := range p.members {
				if c, ok := sc.Client(g); ok && c.Kind == scenario.KindHotAuthor {
					p.hot = append(p.hot, g)
				}
			}
		}
		out[i] = p
	}
	return out
}

// postsPerChannel is the posts planned in every channel, without the hot thread.
func postsPerChannel(sc *scenario.Scenario) int {
	return sc.Shape.HistoryMessagesPerChannel + sc.Shape.ThreadRootsPerChannel*(1+sc.Shape.ThreadDepth)
}

// hotPosts is the hot thread's planned posts: its root and seed_replies.
func hotPosts(sc *scenario.Scenario) int {
	if !sc.HotThreadEnabled() {
		return 0
	}
	return 1 + sc.HotThread.SeedReplies
}
