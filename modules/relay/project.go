package relay

import (
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// projectRevisionError is why a kind-47001 event is not a valid NIP-MP
// Project revision envelope, in Buzz's words (crates/buzz-core/src/
// project_revision.rs, ProjectRevision::parse and ProjectRevisionError;
// newest version read 2026-12-06; docs/buzz-names.md §d), or "" when it is.
// The checks run in parse's order, so the first failure's text is Buzz's.
// Not modelled: the project's existence and can_manage_project (the signer,
// or an owner or admin of its home channel), which need Buzz's Project
// store.
func projectRevisionError(ev *nostr.Event) string {
	if ev.Content != "" {
		return "Project revision content must be empty"
	}
	one := func(name string) (string, string) {
		var vals []string
		n := 0
		for _, t := range ev.Tags {
			if len(t) > 0 && t[0] == name {
				n++
				if len(t) == 2 {
					vals = append(vals, t[1])
				}
			}
		}
		if n != 1 || len(vals) != 1 {
			return "", "Project revision requires exactly one " + name + " tag"
		}
		return vals[0], ""
	}
	a, bad := one("a")
	if bad != "" {
		return bad
	}
	if !projectCoordinate(a) {
		return "invalid Project coordinate"
	}
	base, bad := one("base")
	if bad != "" {
		return bad
	}
	if !hex64(base) {
		return "invalid base Project revision"
	}
	e, bad := one("e")
	if bad != "" {
		return bad
	}
	if !hex64(e) {
		return "invalid expected Project revision"
	}
	op, bad := one("op")
	if bad != "" {
		return bad
	}
	if op != "add-related-channel" && op != "remove-related-channel" {
		return "invalid Project revision operation"
	}
	ch, bad := one("channel")
	if bad != "" {
		return bad
	}
	if !canonicalUUID(ch) {
		return "invalid related channel id"
	}
	seen := map[string]bool{}
	for _, t := range ev.Tags {
		if len(t) == 0 || t[0] != "buzz-related-channel" {
			continue
		}
		if len(t) != 2 || !canonicalUUID(t[1]) || seen[t[1]] || len(seen) >= 64 {
			return "invalid related channel snapshot"
		}
		seen[t[1]] = true
	}
	return ""
}

// projectCoordinate is the exact `30621:<64 lowercase hex>:<d>` form, d
// not empty (ProjectCoordinate::parse).
func projectCoordinate(s string) bool {
	parts := strings.SplitN(s, ":", 3)
	return len(parts) == 3 && parts[0] == "30621" && hex64(parts[1]) && strings.ToLower(parts[1]) == parts[1] && parts[2] != ""
}

// hex64 is 64 hex digits of either case, as parse accepts a revision id.
func hex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// canonicalUUID is a UUID as Uuid's to_string writes it: hyphenated,
// lowercase.
func canonicalUUID(s string) bool { return isUUID(s) && strings.ToLower(s) == s }
