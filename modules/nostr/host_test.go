package nostr

import (
	"strings"
	"testing"
)

// The accept/refuse table of Buzz's validate_host tests
// (crates/buzz-relay/src/handlers/community_provisioning.rs @3430836).
func TestValidateCanonicalHost(t *testing.T) {
	for _, h := range []string{"acme.communities.buzz.xyz", "localhost:3000", "[::1]:3000", "127.0.0.1:8080", "a-b.example", "x1.example:65535"} {
		if err := ValidateCanonicalHost(h); err != nil {
			t.Errorf("%q refused: %v", h, err)
		} else if NormalizeHost(h) != h {
			t.Errorf("%q accepted but normalises to %q", h, NormalizeHost(h))
		}
	}
	for _, h := range []string{"", "Acme.example", "acme.example:443", "acme.example:80", "acme.example.",
		"wss://acme.example", "acme.example/path", "user@acme.example", "acme.example?x=1", "acme.example#frag",
		":", "example..com", "foo_bar.example", "-bad.example", "bad-.example", "example.com:99999", "[::1", "[not-ipv6]",
		strings.Repeat("a", 64) + ".example", "acme .example", "acme\n.example", strings.Repeat("a", 260) + ".example",
		"acme.example:", "acme.example:0"} {
		if err := ValidateCanonicalHost(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}
