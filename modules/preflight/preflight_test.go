package preflight

import (
	"strings"
	"testing"
)

// Each of Buzz's AUTH gates is named, with the setting that turns it on,
// from the refusal as a client's error carries it; anything else is not a
// gate (issue 41 item 3; docs/buzz-names.md §b, §c).
func TestAuthGateNamesEachGate(t *testing.T) {
	for refusal, want := range map[string]string{
		`auth: error: blocked: you are banned from this community`:               "community ban",
		`auth: error: auth-required: verification failed`:                        "BUZZ_PUBKEY_ALLOWLIST",
		`auth: error: restricted: dntls approval pending`:                        "BUZZ_DNTLS_ADMISSION=approve",
		`auth: error: error: internal error applying DNTLS admission`:            "BUZZ_DNTLS_ADMISSION",
		`auth: error: restricted: evidence rejected`:                             "BUZZ_NIP_FI_MODE=enforce",
		`auth: error: auth-required: authentication required`:                    "Nostr-Federated-Identity",
		`auth: error: error: internal error checking restriction state`:          "ban state",
		`connect: error: upgrade refused: HTTP 401: "authentication required\n"`: "nip_fi_token_command",
		`connect: error: upgrade refused: HTTP 403: "evidence rejected\n"`:       "BUZZ_NIP_FI_ISSUERS",
	} {
		g, ok := AuthGate(refusal)
		if !ok || !strings.Contains(g.Name+" "+g.Advice, want) {
			t.Errorf("%s: %+v %v, want it to name %q", refusal, g, ok, want)
		}
	}
	for _, other := range []string{"dial tcp 127.0.0.1:1: connect: connection refused", "auth: timed out", "restricted: not a relay member"} {
		if g, ok := AuthGate(other); ok {
			t.Errorf("%s named as gate %q", other, g.Name)
		}
	}
}
