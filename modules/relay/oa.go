package relay

import "github.com/buzzload/buzzload/modules/nostr"

// verifyOATag checks a NIP-OA tag carried by an AUTH event (or an
// x-auth-tag header) for agent: shape, owner ≠ agent, owner signature, and
// the created_at clauses against createdAt. kind clauses restrict the events
// the agent publishes, not its AUTH, so they are not applied here (our
// decision: docs/buzz-protocol.md does not say how Buzz treats them on AUTH).
func verifyOATag(tag []string, agent string, _ int, createdAt int64) (string, error) {
	owner, conds, err := nostr.VerifyOATag(tag, agent)
	if err != nil {
		return "", err
	}
	var timeOnly nostr.OAConditions
	for _, c := range conds {
		if c.Field != "kind" {
			timeOnly = append(timeOnly, c)
		}
	}
	if err := timeOnly.Check(0, createdAt); err != nil {
		return "", err
	}
	return owner, nil
}
