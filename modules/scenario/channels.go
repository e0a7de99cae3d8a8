package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"iter"
	"slices"
	"strconv"
)

// Channel names channel Index (0-based) of community Community.
type Channel struct {
	Community, Index int
}

// HotThreadChannel is where the hot thread's root is seeded: community 0,
// channel 0.
func (s *Scenario) HotThreadChannel() Channel { return hotThreadChannel }

// hotThreadChannel is a constant in all but name.
var hotThreadChannel = Channel{Community: 0, Index: 0}

// Channels is every channel of the run, community by community.
func (s *Scenario) Channels() []Channel {
	out := make([]Channel, 0, s.Shape.Communities*s.Shape.ChannelsPerCommunity)
	for c := 0; c < s.Shape.Communities; c++ {
		for i := 0; i < s.Shape.ChannelsPerCommunity; i++ {
			out = append(out, Channel{c, i})
		}
	}
	return out
}

// ValidChannel reports whether ch exists in the scenario.
func (s *Scenario) ValidChannel(ch Channel) bool {
	return ch.Community >= 0 && ch.Community < s.Shape.Communities &&
		ch.Index >= 0 && ch.Index < s.Shape.ChannelsPerCommunity
}

// IsWide reports whether ch is one of its community's first
// shape.wide_channels channels.
func (s *Scenario) IsWide(ch Channel) bool {
	return s.ValidChannel(ch) && ch.Index < s.Shape.WideChannels
}

// IsPrivate reports whether seed creates ch private; with
// shape.private_channels every channel is.
func (s *Scenario) IsPrivate(ch Channel) bool {
	return s.ValidChannel(ch) && s.Shape.PrivateChannels
}

// HotThreadEnabled reports whether the scenario has a hot thread.
func (s *Scenario) HotThreadEnabled() bool {
	return s.HotThread.SeedReplies > 0 || s.HotThread.Authors > 0
}

// ChannelID is the channel's UUID, the value of its h tag:
//
//	d = SHA-256("buzzload/v1\x00channel\x00" || run_id || "\x00" || decimal(community) || "\x00" || decimal(index))
//
// the first 16 bytes of d with the version nibble set to 8 and the variant
// bits to 10 (an RFC 9562 UUIDv8), written lower-case 8-4-4-4-12. The same
// run_id gives the same ids in seed, every VU and every shard.
func (s *Scenario) ChannelID(ch Channel) string {
	return ChannelID(s.RunID, ch)
}

// ChannelID is Scenario.ChannelID for a run id.
func ChannelID(runID string, ch Channel) string {
	msg := "buzzload/v1\x00channel\x00" + runID + "\x00" + strconv.Itoa(ch.Community) + "\x00" + strconv.Itoa(ch.Index)
	d := sha256.Sum256([]byte(msg))
	u := d[:16]
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// ChannelName is the name seed gives ch: "wide-<i>" for a wide channel,
// "channel-<i>" otherwise.
func (s *Scenario) ChannelName(ch Channel) string {
	if s.IsWide(ch) {
		return "wide-" + strconv.Itoa(ch.Index)
	}
	return "channel-" + strconv.Itoa(ch.Index)
}

// Membership
//
// A member's channels are all in its own community (index % communities of
// its population index; hot-thread authors are in community 0). Within the
// community the first K = shape.wide_channels channels are wide and the other
// R = channels_per_community - K are regular, at positions 0..R-1.
//
//   - A human joins every wide channel of its community when IsWideMember.
//     Agents and authors never do.
//   - Its own channels are n consecutive regular positions, wrapping, from
//     position (index / communities) mod R: n is its tier's channels, or
//     channels_per_member (always, for agents).
//   - A hot-thread author's only channel is the hot thread's.
//
// With no wide channels and no tiers this is the plain assignment: member
// index i of a community with C channels joins channels i/communities … +n-1
// mod C.

func (s *Scenario) regular() int { return s.Shape.ChannelsPerCommunity - s.Shape.WideChannels }

// MemberChannels is the single assignment function: the channels global
// index g is a member of, wide channels first, then its own run in order.
// It is nil for an index that is not a client.
func (s *Scenario) MemberChannels(g int) []Channel {
	c, ok := s.Client(g)
	if !ok {
		return nil
	}
	if c.Kind == KindHotAuthor {
		return []Channel{hotThreadChannel}
	}
	k, r := s.Shape.WideChannels, s.regular()
	n := s.Population.ChannelsPerMember
	wide := false
	if c.Kind.IsHuman() {
		n = s.OwnChannels(c.Index)
		wide = s.IsWideMember(c.Index)
	}
	n = min(n, r)
	out := make([]Channel, 0, n+k)
	if wide {
		for i := 0; i < k; i++ {
			out = append(out, Channel{c.Community, i})
		}
	}
	if n > 0 {
		start := (c.Index / s.Shape.Communities) % r
		for d := 0; d < n; d++ {
			out = append(out, Channel{c.Community, k + (start+d)%r})
		}
	}
	return out
}

// ChannelMembers yields the global indices whose MemberChannels contain ch,
// among the clients that run at the largest ramp step: the members seed adds
// to a private channel. See ChannelMembersAt.
func (s *Scenario) ChannelMembers(ch Channel) iter.Seq[int] {
	return s.ChannelMembersAt(ch, s.PeakUsers())
}

// ChannelMembersAt yields the global indices whose MemberChannels contain
// ch among the clients that run at a step with users, each once, in a fixed
// order that is not sorted (ChannelMemberList sorts). It inverts
// MemberChannels without a table: only members whose run could reach ch are
// visited, so the cost is about the number of members times
// max channels / mean channels.
func (s *Scenario) ChannelMembersAt(ch Channel, users float64) iter.Seq[int] {
	return func(yield func(int) bool) {
		if !s.ValidChannel(ch) {
			return
		}
		C := s.Shape.Communities
		humans := ScaleCount(s.Population.Humans, users)
		agents := ScaleCount(s.Population.Agents, users)
		authors := ScaleCount(s.HotThread.Authors, users)
		if ch.Index < s.Shape.WideChannels {
			for i := ch.Community; i < humans; i += C {
				if s.IsWideMember(i) && !yield(s.GlobalIndex(KindHuman, i)) {
					return
				}
			}
		} else if r := s.regular(); r > 0 {
			pos := ch.Index - s.Shape.WideChannels
			// A member whose run starts at position st covers pos when
			// d = (pos - st) mod r is below its channel count, so walk d and
			// the members starting at pos - d.
			maxN := s.Population.ChannelsPerMember
			for _, t := range s.Population.Tiers {
				maxN = max(maxN, t.Channels)
			}
			maxN = min(maxN, r)
			for d := 0; d < maxN; d++ {
				st := ((pos-d)%r + r) % r
				for m := st; m*C+ch.Community < humans; m += r {
					i := m*C + ch.Community
					if min(s.OwnChannels(i), r) > d && !yield(s.GlobalIndex(KindHuman, i)) {
						return
					}
				}
			}
			if n := min(s.Population.ChannelsPerMember, r); n > 0 {
				for d := 0; d < n; d++ {
					st := ((pos-d)%r + r) % r
					for m := st; m*C+ch.Community < agents; m += r {
						if !yield(s.GlobalIndex(KindAgent, m*C+ch.Community)) {
							return
						}
					}
				}
			}
		}
		if ch == hotThreadChannel {
			for i := 0; i < authors; i++ {
				if !yield(s.GlobalIndex(KindHotAuthor, i)) {
					return
				}
			}
		}
	}
}

// ChannelMemberList is ChannelMembers collected and sorted ascending.
func (s *Scenario) ChannelMemberList(ch Channel) []int {
	out := slices.Collect(s.ChannelMembers(ch))
	slices.Sort(out)
	return out
}

// ChannelWeight is the share of a member's typing, messages and reactions
// that goes to one of its channels.
type ChannelWeight struct {
	Channel Channel
	Weight  float64
}

// ActivityWeights is how member g spreads its typing, messages and
// reactions over MemberChannels(g), in the same order; the weights sum to 1.
// With population.wide_activity_share set, a member of the wide channels
// sends that share to them (split evenly) and the rest to its own channels
// (split evenly); a member without own channels sends everything to the wide
// ones. Unset, or for a member outside the wide channels, every channel
// weighs the same.
func (s *Scenario) ActivityWeights(g int) []ChannelWeight {
	chans := s.MemberChannels(g)
	out := make([]ChannelWeight, len(chans))
	wide := 0
	for _, ch := range chans {
		if s.IsWide(ch) {
			wide++
		}
	}
	own := len(chans) - wide
	share := s.Population.WideActivityShare
	for i, ch := range chans {
		w := 1 / float64(len(chans))
		switch {
		case share == nil || wide == 0 || own == 0:
			// uniform
		case s.IsWide(ch):
			w = *share / float64(wide)
		default:
			w = (1 - *share) / float64(own)
		}
		out[i] = ChannelWeight{Channel: ch, Weight: w}
	}
	return out
}
