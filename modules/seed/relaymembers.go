package seed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ErrRelayMembership marks a seed that could not make the run's identities
// relay members of a relay that requires it (BUZZ_REQUIRE_RELAY_MEMBERSHIP):
// no client of the run could authenticate, so the run stops as a target
// problem, not a load failure.
var ErrRelayMembership = errors.New("the relay requires relay membership (BUZZ_REQUIRE_RELAY_MEMBERSHIP=true) and the community owner cannot add the run's identities")

// relayMembers makes every identity of the run a relay member of its
// community when the relay enforces NIP-43 membership (its NIP-11 lists NIP
// 43, as Buzz's nip11.rs does only then): the owner, bootstrapped a member by
// provisioning, adds each missing one with a kind 9030 (handlers/relay_admin.rs:
// owners and admins may add members; an existing member is a no-op). The
// current roster is read from the relay-signed NIP-43 list (kind 13534), so a
// rerun adds nobody.
func (s *seeder) relayMembers(ctx context.Context) error {
	nc := s.sc.Shape.Communities
	for c := range nc {
		h, err := s.rpc.community(c, s.ids.owner(c).keys, nil)
		if err != nil {
			return err
		}
		var doc struct {
			NIPs []int `json:"supported_nips"`
		}
		if r := h.NIP11(ctx, OpNIP11, &doc); r.Outcome != relayclient.OutcomeOK || !slices.Contains(doc.NIPs, 43) {
			continue
		}
		have, err := s.relayRoster(ctx, h)
		if err != nil {
			return err
		}
		s.count(func(r *Result) { r.RelayMembershipRequired = true })
		for _, pk := range s.communityIdentities(c) {
			if have[pk] {
				s.count(func(r *Result) { r.RelayMembers.Existing++ })
				continue
			}
			pub, err := s.rpc.publish(ctx, h, OpRelayMembers, func(at time.Time) (*nostr.Event, error) {
				return s.ids.owner(c).keys.NewEvent(nostr.KindRelayAddMember, [][]string{{"p", pk}}, "", at)
			})
			if err != nil {
				return err
			}
			if pub.why != "" {
				return fmt.Errorf("community %d: kind 9030 for %s refused: %s: %w", c, pk, pub.why, ErrRelayMembership)
			}
			s.count(func(r *Result) { r.RelayMembers.Created++ })
		}
	}
	return nil
}

// relayRoster reads the relay's NIP-43 membership list (13534 member tags).
func (s *seeder) relayRoster(ctx context.Context, h *relayclient.HTTP) (map[string]bool, error) {
	evs, err := s.rpc.query(ctx, h, "the relay membership list", []relayclient.Filter{{Kinds: []int{nostr.KindMembershipList}, Limit: 1}})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	var newest *nostr.Event
	for i := range evs {
		if e := &evs[i]; e.Kind == nostr.KindMembershipList && (newest == nil || e.CreatedAt > newest.CreatedAt) {
			newest = e
		}
	}
	if newest != nil {
		for _, t := range newest.Tags {
			if len(t) >= 2 && t[0] == "member" {
				have[t[1]] = true
			}
		}
	}
	return have, nil
}

// communityIdentities is every client of community c at the run's peak
// (humans, desktop apps, agents, hot-thread authors) by pubkey.
func (s *seeder) communityIdentities(c int) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range []scenario.Kind{scenario.KindHuman, scenario.KindDesktop, scenario.KindAgent, scenario.KindHotAuthor} {
		for _, g := range s.sc.Clients(k, s.sc.PeakUsers(), scenario.Shard{Count: 1}) {
			cl, ok := s.sc.Client(g)
			if !ok || cl.Community != c {
				continue
			}
			a, err := s.ids.client(g)
			if err != nil {
				continue
			}
			if pk := a.keys.PubKey(); !seen[pk] {
				seen[pk] = true
				out = append(out, pk)
			}
		}
	}
	return out
}
