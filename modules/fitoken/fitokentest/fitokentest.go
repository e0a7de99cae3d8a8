// Package fitokentest is a NIP-FI issuer for tests: an ES256 key that
// mints `nip-fi+jwt` assertions and the BUZZ_NIP_FI_ISSUERS entry (keys
// inline) an embedded relay verifies them with.
package fitokentest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a test identity provider.
type Issuer struct {
	URL, Audience string
	key           *ecdsa.PrivateKey
}

// New is an issuer with a fresh key.
func New(url, audience string) *Issuer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // the system's randomness failed
	}
	return &Issuer{URL: url, Audience: audience, key: k}
}

// IssuersJSON is the BUZZ_NIP_FI_ISSUERS value for this issuer.
func (is *Issuer) IssuersJSON() string {
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "test-1", Algorithm: "ES256", Use: "sig"}}}
	b, _ := json.Marshal([]map[string]any{{
		"issuer": is.URL, "audiences": []string{is.Audience}, "token_class": "nip-fi+jwt",
		"algorithms": []string{"ES256"}, "skew_seconds": 30, "maximum_assertion_age_seconds": 3600,
		"jwks_uri": is.URL + "/.well-known/jwks.json", "jwks": jwks,
	}})
	return string(b)
}

// Mint is an assertion for pubkey valid for ttl, subject "user-<pubkey prefix>".
func (is *Issuer) Mint(pubkey string, ttl time.Duration) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key},
		(&jose.SignerOptions{}).WithType("nip-fi+jwt").WithHeader("kid", "test-1"))
	if err != nil {
		panic(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{
		Issuer: is.URL, Audience: jwt.Audience{is.Audience}, Subject: "user-" + pubkey[:12],
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ttl)),
	}).Claims(map[string]any{"nostr_pubkey": pubkey}).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}
