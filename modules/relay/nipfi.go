package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// NIP-FI enterprise admission, client-attached profile (docs/buzz-names.md
// §b): with BUZZ_NIP_FI_MODE=enforce every WebSocket upgrade and protected
// bridge call (/query, /events, /count) must carry exactly one
// `Nostr-Federated-Identity: Bearer <compact JWS>`, verified against the
// configured issuers; the token's nostr_pubkey must be the key the NIP-42
// AUTH (or the NIP-98 signature) proves, and the socket's session lease
// ends at min(the token's exp, BUZZ_NIP_FI_MAX_CONNECTION_LIFETIME_SECS).
// Sources: Buzz's NIP-FI relay config module (parse_mode, IssuerEnvConfig),
// buzz-auth's verifier (nostr_pubkey, sub, typ nip-fi+jwt; VERIFIER_CONTRACT
// v2: nostr_pubkey always required) and router.rs nip_fi_assertion_guard,
// newest versions read 2026-12-06. Keys: Buzz fetches each issuer's
// jwks_uri (https); the embedded relay also takes an inline "jwks" object,
// so a test provides its key without a TLS server.

// FIHeader is the client-attached profile's field.
const FIHeader = "Nostr-Federated-Identity"

// Buzz's denial classes (buzz-auth denial_classes_carry_exact_wire_text).
const (
	fiRejectedWS = "restricted: evidence rejected"
)

// FIIssuer is one entry of BUZZ_NIP_FI_ISSUERS.
type FIIssuer struct {
	Issuer                     string              `json:"issuer"`
	Audiences                  []string            `json:"audiences"`
	TokenClass                 string              `json:"token_class"`
	Algorithms                 []string            `json:"algorithms"`
	SkewSeconds                int64               `json:"skew_seconds"`
	MaximumAssertionAgeSeconds int64               `json:"maximum_assertion_age_seconds"`
	JWKSURI                    string              `json:"jwks_uri"`
	JWKS                       *jose.JSONWebKeySet `json:"jwks,omitempty"` // the embedded relay's inline keys
}

// fiPolicy is the parsed NIP-FI configuration (nil: off).
type fiPolicy struct {
	issuers  map[string]FIIssuer
	maxAge   time.Duration
	lifetime time.Duration // 0: no extra partition
}

// parseNIPFI reads the NIP-FI settings with Buzz's bounds and messages.
func parseNIPFI(mode, issuers string, maxAgeSecs, lifetimeSecs int64) (*fiPolicy, error) {
	switch mode {
	case "", "off":
		return nil, nil
	case "enforce":
	case "deny_protected":
		return nil, errors.New(`BUZZ_NIP_FI_MODE: "deny_protected" is not modelled by the embedded relay`)
	default:
		return nil, fmt.Errorf(`BUZZ_NIP_FI_MODE must be "enforce", "deny_protected", or "off"; got %q`, mode)
	}
	if maxAgeSecs < 1 || maxAgeSecs > 86400 {
		return nil, fmt.Errorf("BUZZ_NIP_FI_MAXIMUM_ASSERTION_AGE_SECS: want 1..=86400 in enforce mode, got %d", maxAgeSecs)
	}
	if lifetimeSecs < 0 || lifetimeSecs > 2592000 {
		return nil, fmt.Errorf("BUZZ_NIP_FI_MAX_CONNECTION_LIFETIME_SECS: want 1..=2592000, got %d", lifetimeSecs)
	}
	var list []FIIssuer
	if err := json.Unmarshal([]byte(issuers), &list); err != nil || len(list) == 0 {
		return nil, fmt.Errorf("BUZZ_NIP_FI_ISSUERS: want a non-empty JSON array of issuers in enforce mode (%v)", err)
	}
	p := &fiPolicy{issuers: map[string]FIIssuer{}, maxAge: time.Duration(maxAgeSecs) * time.Second,
		lifetime: time.Duration(lifetimeSecs) * time.Second}
	for i, is := range list {
		switch {
		case is.Issuer == "" || len(is.Audiences) == 0 || len(is.Algorithms) == 0:
			return nil, fmt.Errorf("BUZZ_NIP_FI_ISSUERS[%d]: issuer, audiences and algorithms are required", i)
		case is.TokenClass != "nip-fi+jwt":
			return nil, fmt.Errorf("BUZZ_NIP_FI_ISSUERS[%d]: token_class %q: only \"nip-fi+jwt\" is accepted", i, is.TokenClass)
		case is.JWKS == nil || len(is.JWKS.Keys) == 0:
			return nil, fmt.Errorf("BUZZ_NIP_FI_ISSUERS[%d]: the embedded relay needs the issuer's keys inline (\"jwks\"); it fetches no jwks_uri", i)
		}
		for _, a := range is.Algorithms {
			if !slices.Contains(fiAlgorithms, jose.SignatureAlgorithm(a)) {
				return nil, fmt.Errorf("BUZZ_NIP_FI_ISSUERS[%d]: algorithm %q is not an asymmetric JWS algorithm", i, a)
			}
		}
		p.issuers[is.Issuer] = is
	}
	return p, nil
}

var fiAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}

// fiGrant is what a verified token admits: one Nostr key, until deadline.
type fiGrant struct {
	pubkey   string
	deadline time.Time
}

// fiVerify checks one request's field. missing says no usable field was
// there (401 / auth-required); any other error is evidence rejected.
func (p *fiPolicy) verify(h http.Header, now time.Time) (g fiGrant, missing bool, err error) {
	vals := h.Values(FIHeader)
	if len(vals) == 0 {
		return g, true, errors.New("no " + FIHeader + " field")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if len(vals) != 1 || !ok || tok == "" || strings.ContainsAny(tok, ", ") {
		return g, false, errors.New("the field is repeated, combined or not Bearer")
	}
	parsed, err := jwt.ParseSigned(tok, fiAlgorithms)
	if err != nil || len(parsed.Headers) != 1 {
		return g, false, errors.New("not one compact JWS")
	}
	hdr := parsed.Headers[0]
	if typ, _ := hdr.ExtraHeaders[jose.HeaderType].(string); typ != "nip-fi+jwt" {
		return g, false, fmt.Errorf("typ %q, want nip-fi+jwt", typ)
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return g, false, errors.New("unreadable claims")
	}
	is, ok := p.issuers[unverified.Issuer]
	if !ok || !slices.Contains(is.Algorithms, hdr.Algorithm) {
		return g, false, errors.New("unknown issuer or algorithm")
	}
	keys := is.JWKS.Key(hdr.KeyID)
	if len(keys) != 1 {
		return g, false, errors.New("no single key for the kid")
	}
	var std jwt.Claims
	var extra struct {
		NostrPubkey string `json:"nostr_pubkey"`
	}
	if err := parsed.Claims(keys[0].Key, &std, &extra); err != nil {
		return g, false, errors.New("bad signature")
	}
	skew := time.Duration(is.SkewSeconds) * time.Second
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: is.Issuer, AnyAudience: is.Audiences, Time: now}, skew); err != nil {
		return g, false, err
	}
	maxAge := p.maxAge
	if is.MaximumAssertionAgeSeconds > 0 {
		maxAge = min(maxAge, time.Duration(is.MaximumAssertionAgeSeconds)*time.Second)
	}
	switch {
	case std.Expiry == nil || std.IssuedAt == nil:
		return g, false, errors.New("exp and iat are required")
	case now.Sub(std.IssuedAt.Time()) > maxAge+skew:
		return g, false, errors.New("the assertion is older than its maximum age")
	case std.Subject == "" || len(std.Subject) > 1024:
		return g, false, errors.New("no bounded sub")
	case len(extra.NostrPubkey) != 64 || !isHexLen(extra.NostrPubkey, 64):
		return g, false, errors.New("nostr_pubkey must be 64 lowercase hex digits")
	}
	g = fiGrant{pubkey: extra.NostrPubkey, deadline: std.Expiry.Time()}
	if p.lifetime > 0 {
		g.deadline = minTime(g.deadline, now.Add(p.lifetime))
	}
	return g, false, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// fiGrantKey carries a bridge request's verified grant in its context.
type fiGrantKey struct{}

// fiDeny answers a refused request with Buzz's denial class.
func fiDeny(w http.ResponseWriter, missing bool) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if missing {
		w.Header().Set("WWW-Authenticate", "Nostr")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte("authentication required\n"))
		return
	}
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte("evidence rejected\n"))
}

// fiLeaseReason is the close reason at a session lease's end (Buzz logs
// "NIP-FI session lease expired — closing connection"; its close frame was
// not determined: 1008 with this reason is ours).
const fiLeaseReason = "NIP-FI session lease expired"
