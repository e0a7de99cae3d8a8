package store

import (
	"errors"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Reply and reaction refusals; the messages are Buzz's OK reasons
// (docs/buzz-protocol.md §4.3, §4.4), so the server can send err.Error() as is.
var (
	ErrParentNotFound         = errors.New("invalid: reply parent not found")
	ErrParentOtherChannel     = errors.New("invalid: reply parent event belongs to a different channel")
	ErrRootMismatch           = errors.New("invalid: root tag does not match thread ancestry")
	ErrDepthExceeded          = errors.New("invalid: thread depth limit exceeded")
	ErrReactionTargetNotFound = errors.New("invalid: reaction target event not found")
	ErrDuplicateReaction      = errors.New("duplicate: reaction already exists")
)

// CheckReply validates a thread reply before the server stores it and
// returns its depth (0 when ev is not a reply: no e tag marked "reply").
// The parent must be stored (a deleted parent still counts: its thread
// stays readable) and in ev's channel (its h tag), the "root" marker, when
// present, must name the parent's thread root, and the depth must be at
// most MaxThreadDepth.
func (s *Store) CheckReply(ev *nostr.Event) (int, error) {
	pid, rid := ThreadTags(ev)
	if pid == "" {
		return 0, nil
	}
	par := s.lookup(pid)
	if par == nil || s.isRemoved(par) {
		return 0, ErrParentNotFound
	}
	if par.part.channel != ev.TagValue("h") {
		return 0, ErrParentOtherChannel
	}
	root := par.id
	if par.root != nil {
		root = par.root.id
	}
	if rid != "" && rid != root {
		return 0, ErrRootMismatch
	}
	depth := int(max(par.depth, 0)) + 1
	if depth > MaxThreadDepth {
		return 0, ErrDepthExceeded
	}
	return depth, nil
}

// CheckReaction validates a kind-7 reaction before the server stores it:
// the target (last e tag) must be stored and not deleted, and the author
// must not already have reacted to it with the same content. Returns the
// target. Add refuses the duplicate atomically too (DuplicateReaction), so
// two racing reactions cannot both be stored.
func (s *Store) CheckReaction(ev *nostr.Event) (*nostr.Event, error) {
	t := s.lookup(lastE(ev))
	if t == nil || t.deleted.Load() || s.isRemoved(t) {
		return nil, ErrReactionTargetNotFound
	}
	p := t.part
	p.mu.RLock()
	dup := p.react[reactionKey{t.id, ev.PubKey, ev.Content}] != nil
	p.mu.RUnlock()
	if dup {
		return nil, ErrDuplicateReaction
	}
	return t.ev, nil
}
