package scenario

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// plainShape: 2 communities of 5 channels, 6 humans and 2 agents per unit,
// 2 channels each, no wide channels, no tiers; two steps of 1x and 2x users.
const plainShape = `run_id = "t"
[shape]
communities = 2
channels_per_community = 5
[population]
humans = 6
agents = 2
channels_per_member = 2
[[ramp]]
users = 1
hold_secs = 1
[[ramp]]
users = 2
hold_secs = 1
`

func chans(pairs ...int) []Channel {
	var out []Channel
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Channel{pairs[i], pairs[i+1]})
	}
	return out
}

// The default assignment, pinned by hand: member index i is in community
// i % 2 and joins channels i/2 and i/2+1 (mod 5) there.
func TestDefaultAssignmentIsPinned(t *testing.T) {
	s := mustParse(t, plainShape)
	cases := []struct {
		g    int
		kind Kind
		idx  int
		want []Channel
	}{
		{0, KindHuman, 0, chans(0, 0, 0, 1)},
		{1, KindHuman, 1, chans(1, 0, 1, 1)},
		{2, KindHuman, 2, chans(0, 1, 0, 2)},
		{3, KindHuman, 3, chans(1, 1, 1, 2)},
		{4, KindHuman, 4, chans(0, 2, 0, 3)},
		{5, KindHuman, 5, chans(1, 2, 1, 3)},
		{6, KindAgent, 0, chans(0, 0, 0, 1)},
		{7, KindAgent, 1, chans(1, 0, 1, 1)},
		// the second unit of users: block 1 of the global layout
		{8, KindHuman, 6, chans(0, 3, 0, 4)},
		{9, KindHuman, 7, chans(1, 3, 1, 4)},
		{10, KindHuman, 8, chans(0, 4, 0, 0)}, // the run wraps
		{11, KindHuman, 9, chans(1, 4, 1, 0)},
		{12, KindHuman, 10, chans(0, 0, 0, 1)},
		{13, KindHuman, 11, chans(1, 0, 1, 1)},
		{14, KindAgent, 2, chans(0, 1, 0, 2)},
		{15, KindAgent, 3, chans(1, 1, 1, 2)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("g=%d", c.g), func(t *testing.T) {
			cl, ok := s.Client(c.g)
			if !ok || cl.Kind != c.kind || cl.Index != c.idx || cl.Community != c.want[0].Community {
				t.Errorf("Client(%d) = %+v, want %v index %d community %d", c.g, cl, c.kind, c.idx, c.want[0].Community)
			}
			if got := s.MemberChannels(c.g); !slices.Equal(got, c.want) {
				t.Errorf("MemberChannels(%d) = %v, want %v", c.g, got, c.want)
			}
		})
	}
	// Pinned inversion of the same shape at the peak (2x users).
	if got, want := s.ChannelMemberList(Channel{0, 0}), []int{0, 6, 10, 12}; !slices.Equal(got, want) {
		t.Errorf("ChannelMembers(0/0) = %v, want %v", got, want)
	}
	if got, want := s.ChannelMemberList(Channel{1, 2}), []int{3, 5, 15}; !slices.Equal(got, want) {
		t.Errorf("ChannelMembers(1/2) = %v, want %v", got, want)
	}
	if got := slices.Collect(s.ChannelMembersAt(Channel{0, 0}, 1)); len(got) != 2 {
		t.Errorf("ChannelMembersAt(0/0, users 1) = %v, want humans 0 and agent 6", got)
	}
}

// Shapes for the exhaustive inversion check.
var inversionShapes = []struct{ name, src string }{
	{"plain", plainShape},
	{"wide channels and tiers", `run_id = "t"
[shape]
communities = 3
channels_per_community = 7
wide_channels = 2
[population]
humans = 23
agents = 4
channels_per_member = 2
wide_member_fraction = 0.4
tiers = [{ fraction = 0.2, channels = 5 }, { fraction = 0.3, channels = 1 }]
[hot_thread]
authors = 3
[[ramp]]
users = 1
hold_secs = 1
[[ramp]]
users = 2.5
hold_secs = 1
`},
	{"tier joining every regular channel", `run_id = "t"
[shape]
communities = 2
channels_per_community = 4
wide_channels = 1
[population]
humans = 17
agents = 3
channels_per_member = 1
wide_member_fraction = 1
tiers = [{ fraction = 0.5, channels = 3 }, { fraction = 0.5, channels = 0 }]
[[ramp]]
users = 3
hold_secs = 1
`},
	{"every channel wide", `run_id = "t"
[shape]
communities = 2
channels_per_community = 3
wide_channels = 3
[population]
humans = 9
agents = 2
channels_per_member = 0
wide_member_fraction = 0.5
[hot_thread]
authors = 1
seed_replies = 1
[[ramp]]
users = 2
hold_secs = 1
`},
	{"communities dividing the unit", `run_id = "t"
[shape]
communities = 4
channels_per_community = 6
[population]
humans = 6
agents = 2
channels_per_member = 6
[[ramp]]
users = 1.5
hold_secs = 1
`},
}

// ChannelMembers(c) contains g iff g runs at the peak and c is in
// MemberChannels(g), each member once; checked over every channel and every
// global index up to past the peak.
func TestChannelMembersInvertsMemberChannels(t *testing.T) {
	for _, sh := range inversionShapes {
		t.Run(sh.name, func(t *testing.T) {
			s := mustParse(t, sh.src)
			limit := int(math.Ceil(s.PeakUsers())+1) * s.unit()
			for _, ch := range s.Channels() {
				members := map[int]bool{}
				for g := range s.ChannelMembers(ch) {
					if members[g] {
						t.Fatalf("%v: member %d yielded twice", ch, g)
					}
					members[g] = true
				}
				for g := 0; g < limit; g++ {
					want := s.Active(g, s.PeakUsers()) && slices.Contains(s.MemberChannels(g), ch)
					if members[g] != want {
						t.Fatalf("%v: member %d is %v in ChannelMembers, want %v (MemberChannels %v)", ch, g, members[g], want, s.MemberChannels(g))
					}
					delete(members, g)
				}
				if len(members) > 0 {
					t.Fatalf("%v: members beyond the population: %v", ch, members)
				}
			}
		})
	}
}

func TestMemberChannelsRules(t *testing.T) {
	s := mustParse(t, inversionShapes[1].src)
	peak := s.PeakUsers()
	wideSeen, tierSeen := 0, [2]int{}
	for _, k := range []Kind{KindHuman, KindDesktop, KindAgent, KindHotAuthor} {
		for _, g := range s.Clients(k, peak, Shard{}) {
			cl, _ := s.Client(g)
			got := s.MemberChannels(g)
			seen := map[Channel]bool{}
			for _, ch := range got {
				if seen[ch] {
					t.Fatalf("g=%d joins %v twice", g, ch)
				}
				seen[ch] = true
				if ch.Community != cl.Community {
					t.Fatalf("g=%d (community %d) joins %v in another community", g, cl.Community, ch)
				}
			}
			switch k {
			case KindHotAuthor:
				if !slices.Equal(got, []Channel{s.HotThreadChannel()}) {
					t.Fatalf("author g=%d channels %v, want only the hot thread's", g, got)
				}
				continue
			case KindAgent:
				if len(got) != 2 || s.IsWide(got[0]) {
					t.Fatalf("agent g=%d channels %v: agents join channels_per_member and never wide channels", g, got)
				}
				continue
			}
			wide := s.IsWideMember(cl.Index)
			n := len(got)
			if wide {
				wideSeen++
				if !s.IsWide(got[0]) || !s.IsWide(got[1]) || got[0].Index != 0 || got[1].Index != 1 {
					t.Fatalf("wide member g=%d channels %v: wide channels come first", g, got)
				}
				n -= 2
			}
			wantN := 2
			if tier := s.TierOf(cl.Index); tier >= 0 {
				tierSeen[tier]++
				wantN = s.Population.Tiers[tier].Channels
			}
			if n != wantN {
				t.Fatalf("human %d (tier %d) has %d own channels, want %d", cl.Index, s.TierOf(cl.Index), n, wantN)
			}
			// own channels: consecutive regular positions from index/communities
			for d, ch := range got[len(got)-n:] {
				want := 2 + (cl.Index/3+d)%5
				if ch.Index != want {
					t.Fatalf("human %d own channel %d is %v, want index %d", cl.Index, d, ch, want)
				}
			}
		}
	}
	if wideSeen == 0 || tierSeen[0] == 0 || tierSeen[1] == 0 {
		t.Errorf("shape did not exercise wide members or tiers: %d %v", wideSeen, tierSeen)
	}
}

// The fraction draws hold on every prefix of humans (so at every ramp step),
// not just on average, and are independent of each other.
func TestFractionsAreHonouredOnEveryPrefix(t *testing.T) {
	s := mustParse(t, `run_id = "t"
[shape]
channels_per_community = 20
wide_channels = 3
[population]
humans = 20000
agents = 0
wide_member_fraction = 0.3
tiers = [{ fraction = 0.1, channels = 10 }, { fraction = 0.25, channels = 5 }]
[desktop]
fraction = 0.15
[[ramp]]
users = 1
hold_secs = 1
`)
	var wide, desk, tier0, tier1, wideAndTier0, deskAndWide int
	check := func(n int) {
		for _, c := range []struct {
			name  string
			count int
			f     float64
		}{{"wide", wide, 0.3}, {"desktop", desk, 0.15}, {"tier 0", tier0, 0.1}, {"tier 1", tier1, 0.25}} {
			if d := math.Abs(float64(c.count) - c.f*float64(n)); d > 4 {
				t.Fatalf("first %d humans: %d %s, want %.1f±4", n, c.count, c.name, c.f*float64(n))
			}
		}
	}
	for i := 0; i < 20000; i++ {
		w, d, tr := s.IsWideMember(i), s.IsDesktop(i), s.TierOf(i)
		if w {
			wide++
		}
		if d {
			desk++
		}
		switch tr {
		case 0:
			tier0++
			if w {
				wideAndTier0++
			}
		case 1:
			tier1++
		}
		if d && w {
			deskAndWide++
		}
		if n := i + 1; n <= 100 || n%97 == 0 {
			check(n)
		}
	}
	if f := float64(wideAndTier0) / float64(tier0); math.Abs(f-0.3) > 0.03 {
		t.Errorf("wide share among tier 0 is %.3f, want about 0.3 (draws must be independent)", f)
	}
	if f := float64(deskAndWide) / float64(desk); math.Abs(f-0.3) > 0.03 {
		t.Errorf("wide share among desktop humans is %.3f, want about 0.3", f)
	}
}

func TestFractionExtremes(t *testing.T) {
	s := mustParse(t, minimal)
	for i := 0; i < 1000; i++ {
		if s.IsDesktop(i) {
			t.Fatalf("desktop.fraction 0 selected human %d", i)
		}
	}
	s.Desktop.Fraction = 1
	s.Shape.WideChannels = 1
	s.Population.WideMemberFraction = 1
	for i := 0; i < 1000; i++ {
		if !s.IsDesktop(i) || !s.IsWideMember(i) {
			t.Fatalf("fraction 1 left out human %d", i)
		}
	}
	s.Shape.WideChannels = 0
	if s.IsWideMember(0) {
		t.Error("a human is a wide member with no wide channels")
	}
}

func TestActivityWeights(t *testing.T) {
	base := `run_id = "t"
[shape]
communities = 1
channels_per_community = 6
wide_channels = 3
[population]
humans = 4
agents = 1
channels_per_member = 3
wide_member_fraction = 1
%s
[[ramp]]
users = 1
hold_secs = 1
`
	type want struct{ wide, own float64 }
	cases := []struct {
		rule, extra string
		g           int
		want        want
	}{
		{"unset: every channel alike, so 3 wide + 3 own sends half to wide", "", 0, want{1.0 / 6, 1.0 / 6}},
		{"share 0.8 splits 0.8 over wide and 0.2 over own", "wide_activity_share = 0.8", 0, want{0.8 / 3, 0.2 / 3}},
		{"share 0 keeps everything in own channels", "wide_activity_share = 0", 0, want{0, 1.0 / 3}},
		{"share 1 sends everything to wide channels", "wide_activity_share = 1", 0, want{1.0 / 3, 0}},
		{"no effect outside the wide channels (agent)", "wide_activity_share = 0.8", 4, want{0, 1.0 / 3}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := mustParse(t, fmt.Sprintf(base, c.extra))
			ws := s.ActivityWeights(c.g)
			if len(ws) != len(s.MemberChannels(c.g)) {
				t.Fatalf("%d weights for %d channels", len(ws), len(s.MemberChannels(c.g)))
			}
			sum := 0.0
			for _, w := range ws {
				exp := c.want.own
				if s.IsWide(w.Channel) {
					exp = c.want.wide
				}
				if math.Abs(w.Weight-exp) > 1e-12 {
					t.Errorf("%v weight %v, want %v", w.Channel, w.Weight, exp)
				}
				sum += w.Weight
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("weights sum to %v", sum)
			}
		})
	}
	s := mustParse(t, fmt.Sprintf(base, "wide_activity_share = 0.3"))
	s.Population.ChannelsPerMember = 0
	for _, w := range s.ActivityWeights(0) {
		if math.Abs(w.Weight-1.0/3) > 1e-12 {
			t.Errorf("member without own channels: %v weighs %v, want 1/3", w.Channel, w.Weight)
		}
	}
}

func TestChannelIDs(t *testing.T) {
	// Expected values computed independently (Python hashlib) from the
	// documented scheme.
	cases := []struct {
		run  string
		ch   Channel
		want string
	}{
		{"local-smoke", Channel{0, 0}, "61096ffe-6067-8853-a616-efcca3d9ca72"},
		{"local-smoke", Channel{1, 3}, "1ee0f458-81c3-86fe-af08-d72642b255b1"},
		{"r", Channel{0, 0}, "1c2b00b5-0cc9-8164-ae74-21f8d7ed921b"},
	}
	for _, c := range cases {
		if got := ChannelID(c.run, c.ch); got != c.want {
			t.Errorf("ChannelID(%q, %v) = %s, want %s", c.run, c.ch, got, c.want)
		}
	}
	s := mustParse(t, `run_id = "x"
[shape]
communities = 30
channels_per_community = 40
[[ramp]]
users = 1
hold_secs = 1
`)
	seen := map[string]Channel{}
	for _, ch := range s.Channels() {
		id := s.ChannelID(ch)
		if prev, dup := seen[id]; dup {
			t.Fatalf("%v and %v share id %s", prev, ch, id)
		}
		seen[id] = ch
		if id[14] != '8' || (id[19] != '8' && id[19] != '9' && id[19] != 'a' && id[19] != 'b') {
			t.Fatalf("%s is not a UUIDv8 with the RFC variant", id)
		}
	}
	if len(seen) != 1200 {
		t.Errorf("%d channels, want 1200", len(seen))
	}
}

func TestWideAndPrivateChannels(t *testing.T) {
	s := mustParse(t, scenarioSrc("[shape]\ncommunities = 2\nchannels_per_community = 4\nwide_channels = 2\nprivate_channels = true\n[population]\nchannels_per_member = 2"))
	cases := []struct {
		ch            Channel
		wide, private bool
		name          string
	}{
		{Channel{0, 0}, true, true, "wide-0"},
		{Channel{1, 1}, true, true, "wide-1"},
		{Channel{1, 2}, false, true, "channel-2"},
		{Channel{0, 4}, false, false, "channel-4"}, // does not exist
		{Channel{2, 0}, false, false, "channel-0"}, // does not exist
	}
	for _, c := range cases {
		if s.IsWide(c.ch) != c.wide || s.IsPrivate(c.ch) != c.private || s.ChannelName(c.ch) != c.name {
			t.Errorf("%v: wide %v private %v name %q, want %v %v %q", c.ch, s.IsWide(c.ch), s.IsPrivate(c.ch), s.ChannelName(c.ch), c.wide, c.private, c.name)
		}
	}
	if open := mustParse(t, minimal); open.IsPrivate(Channel{0, 0}) {
		t.Error("channels are private by default")
	}
}

func BenchmarkChannelMembersWide(b *testing.B) {
	s, err := Parse("b.toml", []byte(`run_id = "b"
[shape]
communities = 4
channels_per_community = 400
wide_channels = 4
[population]
humans = 10000
agents = 500
channels_per_member = 20
wide_member_fraction = 0.5
tiers = [{ fraction = 0.05, channels = 300 }]
[[ramp]]
users = 3
hold_secs = 1
`))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for range s.ChannelMembers(Channel{1, 100}) {
			n++
		}
		if n == 0 {
			b.Fatal("no members")
		}
	}
}
