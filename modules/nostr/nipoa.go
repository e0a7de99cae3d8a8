package nostr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// NIP-OA owner attestation (Buzz docs/nips/NIP-OA.md): an owner key
// authorises an agent key with the tag
//
//	["auth", <owner pubkey hex>, <conditions>, <owner sig hex>]
//
// where the signature is BIP-340 over sha256("nostr:agent-auth:" + agent
// pubkey hex + ":" + conditions). Buzz reads it from the AUTH event (agent
// rate tier) or from the x-auth-tag HTTP header.

// OAHeader is the HTTP header that carries the NIP-OA tag as a JSON array.
const OAHeader = "x-auth-tag"

// ErrOAInvalid wraps every NIP-OA rejection; the wrapped text says why.
// ErrOANoTag is returned by VerifyOAEvent for an event with no auth tag.
var (
	ErrOAInvalid = errors.New("nip-oa: invalid auth tag")
	ErrOANoTag   = errors.New("nip-oa: no auth tag")
)

// OACondition is one clause of a conditions string: kind=<n>,
// created_at<t or created_at>t.
type OACondition struct {
	Field string // "kind" or "created_at"
	Op    byte   // '=', '<' or '>'
	Value uint64
}

// OAConditions is a parsed conditions string; empty means "no restriction".
type OAConditions []OACondition

const (
	oaMaxKind      = 65535
	oaMaxTimestamp = 4294967295
)

// ParseOAConditions parses the conditions grammar strictly: "" or clauses
// joined by single '&', each exactly `kind=<n>` (0..65535), `created_at<t`
// or `created_at>t` (0..2^32-1), canonical decimals (no sign, no leading
// zero except "0"), no whitespace.
func ParseOAConditions(s string) (OAConditions, error) {
	if s == "" {
		return nil, nil
	}
	clauses := strings.Split(s, "&")
	out := make(OAConditions, 0, len(clauses))
	for i, c := range clauses {
		var cond OACondition
		var num string
		var limit uint64
		switch {
		case strings.HasPrefix(c, "kind="):
			cond.Field, cond.Op, num, limit = "kind", '=', c[len("kind="):], oaMaxKind
		case strings.HasPrefix(c, "created_at<"):
			cond.Field, cond.Op, num, limit = "created_at", '<', c[len("created_at<"):], oaMaxTimestamp
		case strings.HasPrefix(c, "created_at>"):
			cond.Field, cond.Op, num, limit = "created_at", '>', c[len("created_at>"):], oaMaxTimestamp
		case c == "":
			return nil, fmt.Errorf("%w: conditions clause %d is empty (leading, trailing or doubled '&')", ErrOAInvalid, i+1)
		default:
			return nil, fmt.Errorf("%w: conditions clause %d %q is not kind=, created_at< or created_at>", ErrOAInvalid, i+1, trim(c))
		}
		v, ok := canonicalDecimal(num)
		if !ok || v > limit {
			return nil, fmt.Errorf("%w: conditions clause %d %q: value must be a canonical decimal in 0..%d", ErrOAInvalid, i+1, trim(c), limit)
		}
		cond.Value = v
		out = append(out, cond)
	}
	return out, nil
}

// canonicalDecimal accepts "0" or [1-9][0-9]* up to 20 digits.
func canonicalDecimal(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// Check reports whether an event of this kind and created_at satisfies
// every clause; the error names the first clause that fails.
func (cs OAConditions) Check(kind int, createdAt int64) error {
	for _, c := range cs {
		ok := false
		switch {
		case c.Field == "kind":
			ok = kind >= 0 && uint64(kind) == c.Value
		case c.Op == '<':
			ok = createdAt < 0 || uint64(createdAt) < c.Value
		case c.Op == '>':
			ok = createdAt > 0 && uint64(createdAt) > c.Value
		}
		if !ok {
			return fmt.Errorf("%w: event (kind %d, created_at %d) does not satisfy %s", ErrOAInvalid, kind, createdAt, c)
		}
	}
	return nil
}

// String renders the clause in the wire grammar.
func (c OACondition) String() string {
	return c.Field + string(c.Op) + strconv.FormatUint(c.Value, 10)
}

// OAMessage returns the 32-byte message the owner signs:
// sha256("nostr:agent-auth:" + agentPubHex + ":" + conditions).
func OAMessage(agentPubHex, conditions string) [32]byte {
	h := sha256.New()
	h.Write([]byte("nostr:agent-auth:"))
	h.Write([]byte(agentPubHex))
	h.Write([]byte{':'})
	h.Write([]byte(conditions))
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// AttestAgent builds the NIP-OA tag by which owner authorises agentPubHex
// under conditions (checked first; "" means unrestricted).
func AttestAgent(owner *Keys, agentPubHex, conditions string) ([]string, error) {
	if !isHex(agentPubHex, 64) {
		return nil, fmt.Errorf("%w: agent pubkey %q is not 64 lower-case hex characters", ErrOAInvalid, trim(agentPubHex))
	}
	if owner.PubKey() == agentPubHex {
		return nil, fmt.Errorf("%w: owner and agent are the same key", ErrOAInvalid)
	}
	if _, err := ParseOAConditions(conditions); err != nil {
		return nil, err
	}
	msg := OAMessage(agentPubHex, conditions)
	sig, err := owner.SignHash(msg[:])
	if err != nil {
		return nil, fmt.Errorf("nip-oa: sign: %w", err)
	}
	return []string{"auth", owner.PubKey(), conditions, hex.EncodeToString(sig)}, nil
}

// VerifyOATag checks a tag's shape (exactly four elements, lower-case hex
// owner and signature), its conditions syntax, that the owner is not the
// agent, and the owner's signature over the agent key. It does not check the
// conditions against an event (see VerifyOAEvent and OAConditions.Check).
// It returns the owner pubkey and the parsed conditions.
func VerifyOATag(tag []string, agentPubHex string) (owner string, conds OAConditions, err error) {
	if len(tag) != 4 || tag[0] != "auth" {
		return "", nil, fmt.Errorf("%w: want [\"auth\", owner, conditions, sig], got %d elements", ErrOAInvalid, len(tag))
	}
	owner, conditions, sigHex := tag[1], tag[2], tag[3]
	if !isHex(owner, 64) {
		return "", nil, fmt.Errorf("%w: owner %q is not 64 lower-case hex characters", ErrOAInvalid, trim(owner))
	}
	if owner == agentPubHex {
		return "", nil, fmt.Errorf("%w: owner equals the agent (self-attestation)", ErrOAInvalid)
	}
	if !isHex(sigHex, 128) {
		return "", nil, fmt.Errorf("%w: signature is not 128 lower-case hex characters", ErrOAInvalid)
	}
	conds, err = ParseOAConditions(conditions)
	if err != nil {
		return "", nil, err
	}
	pk, err := ParsePubKey(owner)
	if err != nil {
		return "", nil, fmt.Errorf("%w: owner %v", ErrOAInvalid, err)
	}
	var sigb [64]byte
	hex.Decode(sigb[:], []byte(sigHex)) // isHex checked it
	sig, err := schnorr.ParseSignature(sigb[:])
	if err != nil {
		return "", nil, fmt.Errorf("%w: signature: %v", ErrOAInvalid, err)
	}
	msg := OAMessage(agentPubHex, conditions)
	if !sig.Verify(msg[:], pk) {
		return "", nil, fmt.Errorf("%w: owner signature does not verify for agent %s", ErrOAInvalid, trim(agentPubHex))
	}
	return owner, conds, nil
}

// VerifyOAEvent is the full client-side check of NIP-OA provenance: the
// event's own id and signature, exactly one auth tag (none gives ErrOANoTag,
// two or more are invalid), the tag itself against event.pubkey, and the
// conditions against the event's kind and created_at. It returns the owner.
// Unreachable from the binary (deadcode), kept: the client-side whole of NIP-OA, checked
// against the official vectors; the relay verifies AUTH through its parts.
func VerifyOAEvent(e *Event) (owner string, err error) {
	var tag []string
	n := 0
	for _, t := range e.Tags {
		if len(t) > 0 && t[0] == "auth" {
			tag = t
			n++
		}
	}
	switch {
	case n == 0:
		return "", ErrOANoTag
	case n > 1:
		return "", fmt.Errorf("%w: %d auth tags on one event", ErrOAInvalid, n)
	}
	if err := e.Verify(); err != nil {
		return "", fmt.Errorf("%w: event: %v", ErrOAInvalid, err)
	}
	owner, conds, err := VerifyOATag(tag, e.PubKey)
	if err != nil {
		return "", err
	}
	if err := conds.Check(e.Kind, e.CreatedAt); err != nil {
		return "", err
	}
	return owner, nil
}

// OATagHeader renders a tag as the x-auth-tag header value (a JSON array).
func OATagHeader(tag []string) string {
	dst := []byte{'['}
	for i, s := range tag {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return string(append(dst, ']'))
}

// ParseOATagHeader decodes an x-auth-tag header value. The tag still needs
// VerifyOATag.
func ParseOATagHeader(v string) ([]string, error) {
	var tag []string
	if err := json.Unmarshal([]byte(v), &tag); err != nil {
		return nil, fmt.Errorf("%w: %s header is not a JSON array of strings", ErrOAInvalid, OAHeader)
	}
	return tag, nil
}
