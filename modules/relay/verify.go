package relay

import (
	"encoding/hex"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"

	"github.com/buzzload/buzzload/modules/nostr"
)

// verifyResult is the outcome of checking an event's id and signature.
type verifyResult int

const (
	verifyOK verifyResult = iota
	verifyBadID
	verifyBadSig
)

// verifyWithKey checks ev against an already parsed public key (a
// connection's authenticated key), which saves the point decompression
// nostr.Event.Verify repeats for every event; other events use Verify.
func verifyWithKey(ev *nostr.Event, pub *btcec.PublicKey) verifyResult {
	if pub == nil {
		switch err := ev.Verify(); err {
		case nil:
			return verifyOK
		case nostr.ErrBadID:
			return verifyBadID
		default:
			return verifyBadSig
		}
	}
	h := ev.Hash()
	var id [32]byte
	if len(ev.ID) != 64 {
		return verifyBadID
	}
	if _, err := hex.Decode(id[:], []byte(ev.ID)); err != nil || id != h {
		return verifyBadID
	}
	var sigb [64]byte
	if len(ev.Sig) != 128 {
		return verifyBadSig
	}
	if _, err := hex.Decode(sigb[:], []byte(ev.Sig)); err != nil {
		return verifyBadSig
	}
	sig, err := schnorr.ParseSignature(sigb[:])
	if err != nil || !sig.Verify(h[:], pub) {
		return verifyBadSig
	}
	return verifyOK
}
