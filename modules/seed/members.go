package seed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

func (s *seeder) members(ctx context.Context) error {
	var priv []*channelPlan
	for _, p := range s.plans {
		if p.private && len(p.members) > 0 {
			priv = append(priv, p)
		}
	}
	s.track.start(PhaseMembers, s.res.Members.Planned)
	if len(priv) == 0 {
		return nil
	}
	var fe firstErr
	var cmu sync.Mutex
	var chunks []memberChunk
	forEach(ctx, len(priv), s.conc, func(ctx context.Context, i int) {
		p := priv[i]
		have, err := s.readMembers(ctx, p)
		if err != nil {
			fe.set(err)
			return
		}
		var missing []int
		for _, g := range p.members {
			a, err := s.ids.client(g)
			if err != nil {
				fe.set(err)
				return
			}
			if !have[a.keys.PubKey()] {
				missing = append(missing, g)
			}
		}
		there := len(p.members) - len(missing)
		s.count(func(r *Result) { r.Members.Existing += there })
		s.track.add(there)
		p.mu.Lock()
		p.pending = missing
		p.mu.Unlock()
		cmu.Lock()
		for len(missing) > 0 {
			k := min(len(missing), maxTagsPerAddEvent)
			chunks = append(chunks, memberChunk{p, missing[:k:k]})
			missing = missing[k:]
		}
		cmu.Unlock()
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}
	forEach(ctx, len(chunks), s.conc, func(ctx context.Context, i int) {
		if err := s.addMembers(ctx, chunks[i].p, chunks[i].gs); err != nil {
			fe.set(err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}
	// An accepted kind-9000 is not proof: Buzz applies only its first p tag
	// (side_effects.rs extract_p_tag), other relays every one. Read each
	// channel's member list back and add whoever is missing, one per event.
	forEach(ctx, len(priv), s.conc, func(ctx context.Context, i int) {
		if err := s.verifyMembers(ctx, priv[i]); err != nil {
			fe.set(err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}
	if n := s.res.Members.Refused; n > 0 {
		return fmt.Errorf("the relay refused %d of %d members, so nothing was posted: %s", n, s.res.Members.Planned, s.firstRefusal(PhaseMembers))
	}
	return nil
}

// readMembers reads the channel's relay-signed member list (kind 39002) as
// its owner: the members a rerun does not add again.
func (s *seeder) readMembers(ctx context.Context, p *channelPlan) (map[string]bool, error) {
	h, err := s.rpc.community(p.ch.Community, s.ids.owner(p.ch.Community).keys, nil)
	if err != nil {
		return nil, err
	}
	evs, err := s.rpc.query(ctx, h, "the members of channel "+chName(p.ch), []relayclient.Filter{{
		Kinds: []int{nostr.KindGroupMembers}, Tags: map[string][]string{"d": {p.id}}, Limit: 1}})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	var newest *nostr.Event
	for i := range evs {
		e := &evs[i]
		if e.Kind == nostr.KindGroupMembers && e.TagValue("d") == p.id && (newest == nil || e.CreatedAt > newest.CreatedAt) {
			newest = e
		}
	}
	if newest != nil {
		for _, t := range newest.Tags {
			if len(t) >= 2 && t[0] == "p" {
				have[t[1]] = true
			}
		}
	}
	return have, nil
}

// addMembers adds gs to p with one kind-9000. When the relay refuses it,
// the chunk is halved until the refused members are found and named (a
// kind-9000 for members already added is harmless); a throttle that never
// clears refuses the whole chunk instead.
func (s *seeder) addMembers(ctx context.Context, p *channelPlan, gs []int) error {
	own := s.ids.owner(p.ch.Community)
	h, err := s.rpc.community(p.ch.Community, own.keys, nil)
	if err != nil {
		return err
	}
	tags := make([][]string, 0, len(gs)+1)
	tags = append(tags, []string{"h", p.id})
	for _, g := range gs {
		a, err := s.ids.client(g)
		if err != nil {
			return err
		}
		tags = append(tags, []string{"p", a.keys.PubKey()})
	}
	pub, err := s.rpc.publish(ctx, h, OpMembers, func(at time.Time) (*nostr.Event, error) {
		return own.keys.NewEvent(nostr.KindPutUser, tags, "", at)
	})
	if err != nil {
		return err
	}
	why := pub.why
	if why == "" {
		// Accepted (or the same event was already there): whether the
		// members are in is for verifyMembers to read back.
		if !pub.dup {
			s.count(func(r *Result) { r.MemberEvents++ })
		}
		return nil
	}
	if len(gs) > 1 && !strings.HasPrefix(why, "rate-limited:") {
		mid := len(gs) / 2
		if err := s.addMembers(ctx, p, gs[:mid]); err != nil {
			return err
		}
		return s.addMembers(ctx, p, gs[mid:])
	}
	for i, g := range gs {
		s.refuse(Refusal{Phase: PhaseMembers, Community: p.ch.Community, Channel: p.ch.Index, ChannelID: p.id,
			What: "member " + describe(s.sc, g), Pubkey: tags[i+1][1], Reason: why})
	}
	p.mu.Lock()
	if p.refused == nil {
		p.refused = map[int]bool{}
	}
	for _, g := range gs {
		p.refused[g] = true
	}
	p.mu.Unlock()
	s.count(func(r *Result) { r.Members.Refused += len(gs) })
	s.track.add(len(gs))
	return nil
}

// verifyMembers reads p's member list (39002) after its kind-9000s were
// accepted: members on it are created; a first pass of several members per
// event tells how many p tags the relay applies (Result.MemberTagsApplied);
// whoever is missing is added one per event and read back again, and a
// member still missing is refused by name.
func (s *seeder) verifyMembers(ctx context.Context, p *channelPlan) error {
	p.mu.Lock()
	var pending []int
	for _, g := range p.pending {
		if !p.refused[g] {
			pending = append(pending, g)
		}
	}
	p.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	pk := func(g int) (string, error) {
		a, err := s.ids.client(g)
		if err != nil {
			return "", err
		}
		return a.keys.PubKey(), nil
	}
	split := func(have map[string]bool, gs []int) (in, out []int, err error) {
		for _, g := range gs {
			k, err := pk(g)
			if err != nil {
				return nil, nil, err
			}
			if have[k] {
				in = append(in, g)
			} else {
				out = append(out, g)
			}
		}
		return in, out, nil
	}
	have, err := s.readMembers(ctx, p)
	if err != nil {
		return err
	}
	in, missing, err := split(have, pending)
	if err != nil {
		return err
	}
	if len(pending) > 1 {
		mode := MemberTagsEvery
		if len(missing) > 0 {
			mode = MemberTagsFirst
		}
		s.count(func(r *Result) {
			if r.MemberTagsApplied == "" || mode == MemberTagsFirst {
				r.MemberTagsApplied = mode
			}
		})
	}
	s.count(func(r *Result) { r.Members.Created += len(in) })
	s.track.add(len(in))
	if len(missing) == 0 {
		return nil
	}
	for _, g := range missing {
		if err := s.addMembers(ctx, p, []int{g}); err != nil {
			return err
		}
	}
	if have, err = s.readMembers(ctx, p); err != nil {
		return err
	}
	p.mu.Lock()
	var retry []int
	for _, g := range missing {
		if !p.refused[g] {
			retry = append(retry, g)
		}
	}
	p.mu.Unlock()
	in, missing, err = split(have, retry)
	if err != nil {
		return err
	}
	s.count(func(r *Result) { r.Members.Created += len(in) })
	s.track.add(len(in))
	for _, g := range missing {
		k, _ := pk(g)
		s.refuse(Refusal{Phase: PhaseMembers, Community: p.ch.Community, Channel: p.ch.Index, ChannelID: p.id,
			What: "member " + describe(s.sc, g), Pubkey: k,
			Reason: "accepted kind-9000 but not on the channel's member list (39002)"})
	}
	s.count(func(r *Result) { r.Members.Refused += len(missing) })
	s.track.add(len(missing))
	return nil
}
