package scenario

import (
	"math"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Kind is the client model a global index runs.
type Kind int

// The client kinds. KindHuman is the basic human; KindDesktop is a human that
// runs the desktop-app model. Both are humans for membership, tiers and keys.
const (
	KindHuman Kind = iota
	KindDesktop
	KindAgent
	KindHotAuthor
	NumKinds
)

func (k Kind) String() string {
	switch k {
	case KindHuman:
		return "human"
	case KindDesktop:
		return "desktop"
	case KindAgent:
		return "agent"
	case KindHotAuthor:
		return "hot_author"
	}
	return "unknown"
}

// Role is the nostr key role of the kind; keys are
// nostr.DeriveKeys(run_id, role, global index).
func (k Kind) Role() nostr.Role {
	switch k {
	case KindAgent:
		return nostr.RoleAgent
	case KindHotAuthor:
		return nostr.RoleHotAuthor
	default:
		return nostr.RoleHuman // desktop humans use human keys
	}
}

// IsHuman reports whether the kind is a human of either model.
func (k Kind) IsHuman() bool { return k == KindHuman || k == KindDesktop }

// Client is what a global index is.
type Client struct {
	Global int
	Kind   Kind
	// Index is the index within its population: the human index for both
	// human kinds, the agent index, or the hot-thread author index.
	Index int
	// Community is the community the client connects to.
	Community int
}

// Global index layout
//
// The population of one unit of users is humans + agents + hot_thread.authors
// clients. Global indices are laid out in blocks of that size: in block b,
// the first `humans` indices are humans b·humans … b·humans+humans-1, then
// the agents, then the authors. A ramp step with users u runs the first
// round(humans·u) humans, round(agents·u) agents and round(authors·u)
// authors, so a client keeps its global index (and its keys and channels)
// from the step that adds it to the end of the run, whatever the ramp, and
// every kind is spread over all shards.

func (s *Scenario) unit() int {
	return s.Population.Humans + s.Population.Agents + s.HotThread.Authors
}

func (s *Scenario) base(k Kind) (count, offset int) {
	switch k {
	case KindHuman, KindDesktop:
		return s.Population.Humans, 0
	case KindAgent:
		return s.Population.Agents, s.Population.Humans
	case KindHotAuthor:
		return s.HotThread.Authors, s.Population.Humans + s.Population.Agents
	}
	return 0, 0
}

// GlobalIndex is the global index of client index i of kind k (for both
// human kinds, i is the human index).
func (s *Scenario) GlobalIndex(k Kind, i int) int {
	n, off := s.base(k)
	if n == 0 || i < 0 {
		return -1
	}
	return (i/n)*s.unit() + off + i%n
}

// Client says what global index g is. ok is false for a negative g or an
// empty population.
func (s *Scenario) Client(g int) (c Client, ok bool) {
	p := s.unit()
	if g < 0 || p == 0 {
		return Client{}, false
	}
	b, o := g/p, g%p
	h, a := s.Population.Humans, s.Population.Agents
	switch {
	case o < h:
		i := b*h + o
		c = Client{Global: g, Kind: KindHuman, Index: i, Community: i % s.Shape.Communities}
		if s.IsDesktop(i) {
			c.Kind = KindDesktop
		}
	case o < h+a:
		i := b*a + o - h
		c = Client{Global: g, Kind: KindAgent, Index: i, Community: i % s.Shape.Communities}
	default:
		i := b*s.HotThread.Authors + o - h - a
		c = Client{Global: g, Kind: KindHotAuthor, Index: i, Community: hotThreadChannel.Community}
	}
	return c, true
}

// ScaleCount is round(n·users), halves rounded up: the clients of a base
// count n at a step with that many users.
func ScaleCount(n int, users float64) int {
	// The explicit conversion rounds the product before the addition, so no
	// platform fuses them into one FMA and every shard gets the same count.
	return int(math.Floor(float64(float64(n)*users) + 0.5))
}

// PeakUsers is the users of the last (largest) ramp step.
func (s *Scenario) PeakUsers() float64 {
	if len(s.Ramp) == 0 {
		return 0
	}
	return s.Ramp[len(s.Ramp)-1].Users
}

// Active reports whether global index g runs at a step with users.
func (s *Scenario) Active(g int, users float64) bool {
	c, ok := s.Client(g)
	if !ok {
		return false
	}
	n, _ := s.base(c.Kind)
	return c.Index < ScaleCount(n, users)
}

// Equidistributed draws
//
// "A fraction f of humans" is decided per human index i by a Weyl sequence:
// u(i) = frac((i+1)·α), in 64-bit fixed point, is below f. Unlike a hash,
// every prefix of humans (so every ramp step) holds within a couple of f·N
// selected humans, and integer arithmetic makes it identical on every
// platform. Each decision uses its own irrational α (the fractional parts of
// the golden ratio, √2 and √3, as in SHA-2's constants), so being a wide
// member, being in a tier and being a desktop human are independent.
const (
	alphaWide    uint64 = 0x9E3779B97F4A7C15 // frac(φ)
	alphaTier    uint64 = 0x6A09E667F3BCC908 // frac(√2)
	alphaDesktop uint64 = 0xBB67AE8584CAA73B // frac(√3)
)

func draw(alpha uint64, i int) uint64 { return uint64(i+1) * alpha }

// fixed converts a fraction to a 64-bit threshold; all is true for 1 and
// above, which selects everyone.
func fixed(f float64) (t uint64, all bool) {
	if f >= 1 {
		return 0, true
	}
	if !(f > 0) {
		return 0, false
	}
	return uint64(math.Ldexp(f, 64)), false
}

func below(u uint64, f float64) bool {
	t, all := fixed(f)
	return all || u < t
}

// IsDesktop reports whether human i runs the desktop-app model.
func (s *Scenario) IsDesktop(i int) bool {
	return i >= 0 && below(draw(alphaDesktop, i), s.Desktop.Fraction)
}

// IsWideMember reports whether human i joins its community's wide channels.
func (s *Scenario) IsWideMember(i int) bool {
	return s.Shape.WideChannels > 0 && i >= 0 && below(draw(alphaWide, i), s.Population.WideMemberFraction)
}

// TierOf is the index of human i's tier in population.tiers, or -1 when it
// keeps channels_per_member. Tier t holds the humans whose draw falls in
// [sum of earlier fractions, that plus tiers[t].fraction).
func (s *Scenario) TierOf(i int) int {
	if i < 0 || len(s.Population.Tiers) == 0 {
		return -1
	}
	u := draw(alphaTier, i)
	cum := 0.0
	for t, tier := range s.Population.Tiers {
		cum += tier.Fraction
		if below(u, cum) {
			return t
		}
	}
	return -1
}

// OwnChannels is how many regular channels human i joins.
func (s *Scenario) OwnChannels(i int) int {
	if t := s.TierOf(i); t >= 0 {
		return s.Population.Tiers[t].Channels
	}
	return s.Population.ChannelsPerMember
}

// Counts is a number of clients of each kind, indexed by Kind.
type Counts [NumKinds]int

// Total is the clients of every kind.
func (c Counts) Total() int {
	t := 0
	for _, n := range c {
		t += n
	}
	return t
}

// Humans is the humans of both models.
func (c Counts) Humans() int { return c[KindHuman] + c[KindDesktop] }

// Shard is one of Count processes that split the clients. The zero Shard
// is the whole run.
//
// Each kind is dealt round-robin over the shards in the order the ramp
// adds its clients (for the two human models, in human index order within
// each model), so every kind is split evenly at every step: the shards'
// counts of a kind differ by at most one. Kind k's deal starts where the
// previous kinds' deals at the peak ended, so at the peak the shards' totals
// differ by at most one too. buzz-loadgen runs g % n == i instead; with a
// population block whose size is a multiple of n, that puts every agent of
// a step on one shard and every hot-thread author on another.
type Shard struct {
	Index, Count int
}

// shardOffsets is where each kind's deal starts: the clients of the kinds
// before it at the peak, whole run.
func (s *Scenario) shardOffsets() (off [NumKinds]int) {
	peak := s.CountsAt(s.PeakUsers(), Shard{})
	sum := 0
	for k := Kind(0); k < NumKinds; k++ {
		off[k] = sum
		sum += peak[k]
	}
	return off
}

// CountsAt is the clients of each kind that run in shard sh at a step with
// users.
func (s *Scenario) CountsAt(users float64, sh Shard) Counts {
	var c Counts
	for _, k := range []Kind{KindAgent, KindHotAuthor} {
		n, _ := s.base(k)
		c[k] = ScaleCount(n, users)
	}
	h := ScaleCount(s.Population.Humans, users)
	for i := 0; i < h; i++ {
		if s.IsDesktop(i) {
			c[KindDesktop]++
		} else {
			c[KindHuman]++
		}
	}
	if sh.Count <= 1 {
		return c
	}
	off := s.shardOffsets()
	for k := Kind(0); k < NumKinds; k++ {
		c[k] = dealt(c[k], off[k], sh)
	}
	return c
}

// dealt is how many of m clients, dealt from position off, land in shard sh.
func dealt(m, off int, sh Shard) int {
	first := ((sh.Index-off)%sh.Count + sh.Count) % sh.Count // rank of the shard's first client
	if first >= m {
		return 0
	}
	return (m-first-1)/sh.Count + 1
}

// Clients lists, in the order a ramp adds them, the global indices of kind k
// that run in shard sh at a step with users. The n-th VU of a kind's
// ramping-vus scenario runs the n-th of these.
func (s *Scenario) Clients(k Kind, users float64, sh Shard) []int {
	n, _ := s.base(k)
	m := ScaleCount(n, users)
	out := make([]int, 0, m/max(sh.Count, 1)+1)
	off := 0
	if sh.Count > 1 {
		off = s.shardOffsets()[k]
	}
	rank := 0
	for i := 0; i < m; i++ {
		if k.IsHuman() && s.IsDesktop(i) != (k == KindDesktop) {
			continue
		}
		if sh.Count <= 1 || (rank+off)%sh.Count == sh.Index {
			out = append(out, s.GlobalIndex(k, i))
		}
		rank++
	}
	return out
}
