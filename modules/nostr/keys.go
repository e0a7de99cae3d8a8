package nostr

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// Keys is a parsed secret key with its x-only public key cached, so signing
// never re-parses or re-derives anything. Keys is safe for concurrent use.
type Keys struct {
	sk     *btcec.PrivateKey
	pub    *btcec.PublicKey
	pubHex string
	signer signer // d and P prepared once for BIP-340 (schnorr.go)
}

// NewKeys parses a 32-byte secret key given as 64 hex characters or as
// NIP-19 nsec1…; surrounding whitespace is ignored. The error never contains
// the key.
func NewKeys(secretHex string) (*Keys, error) {
	secretHex = strings.TrimSpace(secretHex)
	if isNIP19(secretHex, nsecPrefix) {
		b, err := decodeNIP19Key(secretHex, nsecPrefix)
		if err != nil {
			return nil, err
		}
		return KeysFromBytes(b)
	}
	if len(secretHex) != 64 {
		return nil, fmt.Errorf("nostr: secret key must be 64 hex characters or nsec1…, got %d characters", len(secretHex))
	}
	b, err := hex.DecodeString(secretHex)
	if err != nil {
		return nil, fmt.Errorf("nostr: secret key is not hex")
	}
	return KeysFromBytes(b)
}

// KeysFromBytes builds Keys from a 32-byte secret scalar.
func KeysFromBytes(b []byte) (*Keys, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("nostr: secret key must be 32 bytes, got %d", len(b))
	}
	var s btcec.ModNScalar
	if overflow := s.SetByteSlice(b); overflow || s.IsZero() {
		return nil, fmt.Errorf("nostr: secret key is zero or not below the curve order")
	}
	sk := btcec.PrivKeyFromScalar(&s)
	// One scalar multiplication gives both the public key and the signer's
	// x-only P: deriving a key used to cost two.
	sg, pub := newSigner(sk)
	return &Keys{sk: sk, pub: pub, pubHex: hex.EncodeToString(sg.px[:]), signer: sg}, nil
}

// GenerateKeys returns fresh random keys.
func GenerateKeys() (*Keys, error) {
	for {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		if k, err := KeysFromBytes(b[:]); err == nil {
			return k, nil
		}
	}
}

// PubKey returns the x-only public key as 64 lower-case hex characters.
func (k *Keys) PubKey() string { return k.pubHex }

// SecretHex returns the secret key as hex. Only for writing a key file the
// user asked for; never log it.
func (k *Keys) SecretHex() string {
	b := k.sk.Key.Bytes()
	return hex.EncodeToString(b[:])
}

// String never reveals the secret.
func (k *Keys) String() string { return "nostr.Keys{pubkey:" + k.pubHex + "}" }

// GoString never reveals the secret either (%#v).
func (k *Keys) GoString() string { return k.String() }

// Sign sets e.PubKey, e.ID and e.Sig. CreatedAt, Kind, Tags and Content must
// be final. The signature is btcec's schnorr.Sign with FastSign, byte for
// byte, without re-deriving the public key (schnorr.go); like FastSign it
// does not re-verify its own signature: the tests verify independently.
func (k *Keys) Sign(e *Event) error {
	e.PubKey = k.pubHex
	h := e.Hash()
	sig, err := k.signer.sign(&h, nil)
	if err != nil {
		return fmt.Errorf("nostr: sign: %w", err)
	}
	var buf [64 + 128]byte
	hex.Encode(buf[:64], h[:])
	hex.Encode(buf[64:], sig[:])
	all := string(buf[:]) // one allocation for both strings
	e.ID, e.Sig = all[:64], all[64:]
	return nil
}

// SignHash signs a 32-byte message (for NIP-OA attestations).
func (k *Keys) SignHash(h []byte) ([]byte, error) {
	if len(h) != 32 {
		return nil, fmt.Errorf("nostr: sign: message must be 32 bytes, got %d", len(h))
	}
	sig, err := k.signer.sign((*[32]byte)(h), nil)
	if err != nil {
		return nil, err
	}
	return sig[:], nil
}

// NewEvent builds, stamps and signs an event.
func (k *Keys) NewEvent(kind int, tags [][]string, content string, at time.Time) (*Event, error) {
	if tags == nil {
		tags = [][]string{}
	}
	e := &Event{CreatedAt: at.Unix(), Kind: kind, Tags: tags, Content: content}
	if err := k.Sign(e); err != nil {
		return nil, err
	}
	return e, nil
}

// ParsePubKey parses a 64-hex x-only public key.
func ParsePubKey(pubHex string) (*btcec.PublicKey, error) {
	if len(pubHex) != 64 {
		return nil, fmt.Errorf("public key must be 64 hex characters, got %d", len(pubHex))
	}
	b, err := hex.DecodeString(pubHex)
	if err != nil {
		return nil, fmt.Errorf("public key is not hex")
	}
	return schnorr.ParsePubKey(b)
}

// Role names a kind of identity in a run. Keys derive from (run id, role, index).
type Role string

// The roles of a run. Community owners are indexed by community number, the
// others by their global index in the population. Desktop humans have no
// role of their own: they are humans and sign with RoleHuman keys.
const (
	RoleOperator   Role = "operator"    // operator API signer, when the run derives one (local relay)
	RoleOwner      Role = "owner"       // the fixture owner of community n
	RoleHuman      Role = "human"       // human i
	RoleAgent      Role = "agent"       // agent i
	RoleAgentOwner Role = "agent-owner" // the NIP-OA owner that attests agent i
	RoleHotAuthor  Role = "hot-author"  // hot-thread author i
)

// DeriveKeys returns the keys of (runID, role, index):
//
//	secret = SHA-256("buzzload/v1\x00" || runID || "\x00" || role || "\x00" || decimal(index) [|| "\x00" || decimal(retry)])
//
// taking the first retry (starting with none) whose digest is a valid scalar.
// The seed, every VU and every shard compute the same keys with no
// coordination; anyone holding the run id can recompute them, so these are
// load-test identities, never real ones: runs against a shared relay mix in
// a secret (DeriveSecretKeys).
func DeriveKeys(runID string, role Role, index int) *Keys {
	return DeriveSecretKeys(nil, runID, role, index)
}

// DeriveSecretKeys is DeriveKeys with secret mixed in: the digest is
// HMAC-SHA-256 keyed by secret over the same message, so only who holds the
// secret (BUZZLOAD_IDENTITY_SECRET or the operator key, the same on every
// shard and runner) can sign as the run's identities (issue 30; reliability.md
// F6). An empty secret is DeriveKeys.
func DeriveSecretKeys(secret []byte, runID string, role Role, index int) *Keys {
	k, _ := KeysFromBytes(deriveSecret(secret, runID, role, index))
	return k
}

// DerivePubKey is DeriveKeys(runID, role, index).PubKey() without the
// signer: what a client needs of the other members it subscribes to
// (presence peers, co-members), one scalar multiplication each.
// Unreachable from the binary (deadcode), kept: scenario.KeyMemo derives through its own
// cache; this is the one-off form the tests check it against.
func DerivePubKey(runID string, role Role, index int) string {
	return DeriveSecretPubKey(nil, runID, role, index)
}

// DeriveSecretPubKey is DeriveSecretKeys(...).PubKey() without the signer.
func DeriveSecretPubKey(secret []byte, runID string, role Role, index int) string {
	var s btcec.ModNScalar
	s.SetByteSlice(deriveSecret(secret, runID, role, index))
	var p btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&s, &p)
	p.ToAffine()
	var x [32]byte
	p.X.PutBytes(&x)
	return hex.EncodeToString(x[:])
}

// deriveSecret is the first SHA-256 of the derivation message (with a retry
// counter appended from the second try) that is a valid secret scalar.
func deriveSecret(secret []byte, runID string, role Role, index int) []byte {
	base := "buzzload/v1\x00" + runID + "\x00" + string(role) + "\x00" + strconv.Itoa(index)
	for retry := 0; ; retry++ {
		msg := base
		if retry > 0 {
			msg += "\x00" + strconv.Itoa(retry)
		}
		var sum [32]byte
		if len(secret) == 0 {
			sum = sha256.Sum256([]byte(msg))
		} else {
			mac := hmac.New(sha256.New, secret)
			mac.Write([]byte(msg))
			mac.Sum(sum[:0])
		}
		var s btcec.ModNScalar
		if overflow := s.SetByteSlice(sum[:]); !overflow && !s.IsZero() {
			return sum[:]
		}
	}
}
