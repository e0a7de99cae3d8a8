package nostr

import (
	"crypto/sha256"
	"errors"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// signer is a secret key prepared once for BIP-340 signing: btcec's
// schnorr.Sign derives the public key from the secret on every call (a
// second scalar multiplication, ~45 % of a signature in a profile of a real
// run); here d is already negated so that d·G has even y, and the x-only
// public key is kept. The arithmetic is the secp256k1 package btcec itself
// is built on, so the result is byte-identical to btcec's schnorr.Sign
// (RFC 6979 nonce, no aux) and to BIP-340 / nostr-tools (aux nonce).
type signer struct {
	d  secp256k1.ModNScalar
	db [32]byte // bytes(d), the RFC 6979 key input (as btcec feeds it)
	px [32]byte // bytes(P), x-only
}

// newSigner prepares sk (non-zero, below the curve order) and returns its
// public key too, from the same scalar multiplication.
func newSigner(sk *secp256k1.PrivateKey) (signer, *secp256k1.PublicKey) {
	var s signer
	s.d.Set(&sk.Key)
	var p secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&s.d, &p)
	p.ToAffine()
	pub := secp256k1.NewPublicKey(&p.X, &p.Y)
	if p.Y.IsOdd() {
		s.d.Negate()
	}
	p.X.PutBytes(&s.px)
	s.d.PutBytes(&s.db)
	return s, pub
}

// The BIP-340 tags, hashed once: tagged_hash(t, m) = SHA-256(SHA-256(t) || SHA-256(t) || m).
var (
	tagChallenge = sha256.Sum256([]byte("BIP0340/challenge"))
	tagAux       = sha256.Sum256([]byte("BIP0340/aux"))
	tagNonce     = sha256.Sum256([]byte("BIP0340/nonce"))
)

// rfc6979BIP340 is the extra data btcec feeds RFC 6979 for BIP-340 nonces:
// SHA-256("BIP-340").
var rfc6979BIP340 = sha256.Sum256([]byte("BIP-340"))

// taggedHash3 is tagged_hash(tag, a || b || c) for three 32-byte parts,
// hashed from one stack buffer (no allocation).
func taggedHash3(tag *[32]byte, a, b, c *[32]byte) [32]byte {
	var buf [160]byte
	copy(buf[0:], tag[:])
	copy(buf[32:], tag[:])
	copy(buf[64:], a[:])
	copy(buf[96:], b[:])
	copy(buf[128:], c[:])
	return sha256.Sum256(buf[:])
}

var errNonce = errors.New("nostr: BIP-340 nonce is zero")

// sign returns the BIP-340 signature of the 32-byte msg. With aux nil the
// nonce is btcec's (RFC 6979 over bytes(d) and msg with SHA-256("BIP-340")
// as extra data, retrying on the negligible bad challenge as btcec does);
// with aux it is BIP-340's: tagged_hash("BIP0340/nonce", (d xor
// tagged_hash("BIP0340/aux", aux)) || P || msg).
func (s *signer) sign(msg *[32]byte, aux *[32]byte) ([64]byte, error) {
	if aux != nil {
		var buf [96]byte
		copy(buf[0:], tagAux[:])
		copy(buf[32:], tagAux[:])
		copy(buf[64:], aux[:])
		t := sha256.Sum256(buf[:])
		for i := range t {
			t[i] ^= s.db[i]
		}
		rand := taggedHash3(&tagNonce, &t, &s.px, msg)
		var k secp256k1.ModNScalar
		k.SetBytes(&rand)
		if k.IsZero() {
			return [64]byte{}, errNonce
		}
		sig, ok := s.signWith(&k, msg)
		if !ok {
			return [64]byte{}, errors.New("nostr: BIP-340 challenge overflows the curve order")
		}
		return sig, nil
	}
	for iteration := uint32(0); ; iteration++ {
		k := secp256k1.NonceRFC6979(s.db[:], msg[:], rfc6979BIP340[:], nil, iteration)
		sig, ok := s.signWith(k, msg)
		k.Zero()
		if ok {
			return sig, nil
		}
	}
}

// signWith is BIP-340 steps 10–13 with nonce k: R = k·G (k negated for odd
// R.y), e = tagged_hash("BIP0340/challenge", R.x || P || m), s = k + e·d.
// It reports false when e overflows the order (btcec then tries the next
// nonce).
func (s *signer) signWith(nonce *secp256k1.ModNScalar, msg *[32]byte) ([64]byte, bool) {
	var out [64]byte
	k := *nonce
	var r secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&k, &r)
	r.ToAffine()
	if r.Y.IsOdd() {
		k.Negate()
	}
	var rx [32]byte
	r.X.PutBytes(&rx)
	ch := taggedHash3(&tagChallenge, &rx, &s.px, msg)
	var e secp256k1.ModNScalar
	if e.SetBytes(&ch) != 0 {
		k.Zero()
		return out, false
	}
	var sv secp256k1.ModNScalar
	sv.Mul2(&e, &s.d).Add(&k)
	k.Zero()
	copy(out[:32], rx[:])
	var sb [32]byte
	sv.PutBytes(&sb)
	copy(out[32:], sb[:])
	return out, true
}
