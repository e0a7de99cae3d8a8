package nostr

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"
)

// NIP-44 v2 (versioned encryption: secp256k1 ECDH, HKDF-SHA256, ChaCha20,
// HMAC-SHA256, padded plaintext). Buzz uses it for observer frames (24200),
// read state (30078) and reminders (30300).

// Plaintext limits of NIP-44 v2, in bytes.
const (
	NIP44MinPlaintext = 1
	NIP44MaxPlaintext = 65535
)

// Payload limits (base64 characters and decoded bytes) from the spec.
const (
	nip44MinPayload = 132
	nip44MaxPayload = 87472
	nip44MinData    = 99
	nip44MaxData    = 65603
	nip44Version    = 2
)

// Errors of NIP-44 decryption. They are sentinel values so callers (and the
// vector tests) can tell the rejection reasons apart with errors.Is.
var (
	ErrNIP44Version   = errors.New("nip44: unknown encryption version")
	ErrNIP44Size      = errors.New("nip44: invalid payload size")
	ErrNIP44Base64    = errors.New("nip44: invalid base64")
	ErrNIP44MAC       = errors.New("nip44: invalid MAC")
	ErrNIP44Padding   = errors.New("nip44: invalid padding")
	ErrNIP44Plaintext = errors.New("nip44: plaintext must be 1 to 65535 bytes")
)

var nip44Salt = []byte("nip44-v2")

// ConversationKey returns the NIP-44 v2 conversation key between k and the
// x-only public key peerPubHex: HKDF-extract(salt "nip44-v2", ECDH x
// coordinate). It is symmetric (a→b equals b→a) and costs one scalar
// multiplication (~250 µs), so reuse it, e.g. through a ConversationKeys cache.
func (k *Keys) ConversationKey(peerPubHex string) ([32]byte, error) {
	var ck [32]byte
	pub, err := ParsePubKey(peerPubHex)
	if err != nil {
		return ck, fmt.Errorf("nip44: peer %w", err)
	}
	return conversationKey(k.sk, pub), nil
}

func conversationKey(sk *btcec.PrivateKey, pub *btcec.PublicKey) [32]byte {
	var ck [32]byte
	// ParsePubKey lifted x to the even-y point, as NIP-44 requires; the
	// shared secret is the unhashed x coordinate.
	shared := secp256k1.GenerateSharedSecret(sk, pub)
	copy(ck[:], hkdf.Extract(sha256.New, shared, nip44Salt))
	return ck
}

// nip44MessageKeys derives the per-message ChaCha20 key, ChaCha20 nonce and
// HMAC key: HKDF-expand(conversation key, info = nonce, 76 bytes).
func nip44MessageKeys(ck *[32]byte, nonce []byte) (chachaKey [32]byte, chachaNonce [12]byte, hmacKey [32]byte, err error) {
	if len(nonce) != 32 {
		return chachaKey, chachaNonce, hmacKey, fmt.Errorf("nip44: nonce must be 32 bytes, got %d", len(nonce))
	}
	var buf [76]byte
	if _, err := io.ReadFull(hkdf.Expand(sha256.New, ck[:], nonce), buf[:]); err != nil {
		return chachaKey, chachaNonce, hmacKey, fmt.Errorf("nip44: hkdf: %w", err)
	}
	copy(chachaKey[:], buf[0:32])
	copy(chachaNonce[:], buf[32:44])
	copy(hmacKey[:], buf[44:76])
	return chachaKey, chachaNonce, hmacKey, nil
}

// NIP44PaddedLen returns the padded length NIP-44 v2 uses for an n-byte
// plaintext (n ≥ 1): 32 up to 32 bytes, then chunks of 32 up to 256 and of
// next-power-of-two/8 above.
func NIP44PaddedLen(n int) int {
	if n <= 32 {
		return 32
	}
	nextPower := 1
	for nextPower < n {
		nextPower <<= 1
	}
	// nextPower is 1 << (floor(log2(n-1)) + 1), the smallest power of two ≥ n.
	chunk := 32
	if nextPower > 256 {
		chunk = nextPower / 8
	}
	return chunk * ((n-1)/chunk + 1)
}

// NIP44Encrypt encrypts plaintext with a random 32-byte nonce and returns
// the base64 payload.
func NIP44Encrypt(plaintext string, ck [32]byte) (string, error) {
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("nip44: nonce: %w", err)
	}
	return NIP44EncryptWithNonce(plaintext, ck, nonce)
}

// NIP44EncryptWithNonce is NIP44Encrypt with a caller-chosen nonce. Only
// tests should choose nonces: reusing one with the same key breaks secrecy.
func NIP44EncryptWithNonce(plaintext string, ck [32]byte, nonce [32]byte) (string, error) {
	n := len(plaintext)
	if n < NIP44MinPlaintext || n > NIP44MaxPlaintext {
		return "", fmt.Errorf("%w (got %d)", ErrNIP44Plaintext, n)
	}
	key, cnonce, hkey, err := nip44MessageKeys(&ck, nonce[:])
	if err != nil {
		return "", err
	}
	padded := NIP44PaddedLen(n)
	// data = version || nonce || ciphertext(u16 length || plaintext || zeros) || mac
	data := make([]byte, 1+32+2+padded+32)
	data[0] = nip44Version
	copy(data[1:33], nonce[:])
	ct := data[33 : 33+2+padded]
	binary.BigEndian.PutUint16(ct, uint16(n))
	copy(ct[2:], plaintext)
	c, err := chacha20.NewUnauthenticatedCipher(key[:], cnonce[:])
	if err != nil {
		return "", fmt.Errorf("nip44: chacha20: %w", err)
	}
	c.XORKeyStream(ct, ct)
	mac := hmac.New(sha256.New, hkey[:])
	mac.Write(nonce[:])
	mac.Write(ct)
	mac.Sum(data[:33+len(ct)])
	return base64.StdEncoding.EncodeToString(data), nil
}

// NIP44Decrypt checks and decrypts a base64 payload. Errors wrap one of the
// ErrNIP44* sentinels. Unreachable from the binary (deadcode), kept: the other half of
// NIP-44 v2, checked against the official vectors (testdata) so the
// encryption the clients use is known right.
func NIP44Decrypt(payload string, ck [32]byte) (string, error) {
	if payload == "" || payload[0] == '#' {
		return "", ErrNIP44Version
	}
	if len(payload) < nip44MinPayload || len(payload) > nip44MaxPayload {
		return "", fmt.Errorf("%w: %d base64 characters", ErrNIP44Size, len(payload))
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", ErrNIP44Base64
	}
	if len(data) < nip44MinData || len(data) > nip44MaxData {
		return "", fmt.Errorf("%w: %d bytes", ErrNIP44Size, len(data))
	}
	if data[0] != nip44Version {
		return "", fmt.Errorf("%w %d", ErrNIP44Version, data[0])
	}
	nonce := data[1:33]
	ct := data[33 : len(data)-32]
	gotMAC := data[len(data)-32:]
	key, cnonce, hkey, err := nip44MessageKeys(&ck, nonce)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, hkey[:])
	mac.Write(nonce)
	mac.Write(ct)
	var want [32]byte
	if subtle.ConstantTimeCompare(mac.Sum(want[:0]), gotMAC) != 1 {
		return "", ErrNIP44MAC
	}
	c, err := chacha20.NewUnauthenticatedCipher(key[:], cnonce[:])
	if err != nil {
		return "", fmt.Errorf("nip44: chacha20: %w", err)
	}
	// ct is a sub-slice of data, which we own: decrypt in place.
	c.XORKeyStream(ct, ct)
	n := int(binary.BigEndian.Uint16(ct))
	if n < NIP44MinPlaintext || len(ct) != 2+NIP44PaddedLen(n) {
		return "", ErrNIP44Padding
	}
	return string(ct[2 : 2+n]), nil
}

// ConversationKeys caches the conversation keys of one local key with its
// peers, so the ~250 µs ECDH runs once per peer. It is safe for concurrent
// use and holds at most max entries; when full, the oldest entry is evicted
// (FIFO: cheap, and a load generator's peer set is usually far smaller).
type ConversationKeys struct {
	keys *Keys
	max  int

	mu    sync.RWMutex
	m     map[string][32]byte
	order []string // ring of inserted peers, for eviction
	next  int
}

// NewConversationKeys returns a cache for k holding at most max peers
// (max < 1 means 1024). Unreachable from the binary (deadcode), kept: the cached form of
// the conversation key for plain-Go senders of many DMs, vector-checked.
func NewConversationKeys(k *Keys, max int) *ConversationKeys {
	if max < 1 {
		max = 1024
	}
	return &ConversationKeys{keys: k, max: max, m: make(map[string][32]byte)}
}

// Get returns the conversation key with peerPubHex, computing it on a miss.
// Two goroutines missing on the same peer at once may both compute it; the
// result is identical, so that is harmless and keeps the lock off the ECDH.
func (c *ConversationKeys) Get(peerPubHex string) ([32]byte, error) {
	c.mu.RLock()
	ck, ok := c.m[peerPubHex]
	c.mu.RUnlock()
	if ok {
		return ck, nil
	}
	ck, err := c.keys.ConversationKey(peerPubHex)
	if err != nil {
		return ck, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[peerPubHex]; ok {
		return ck, nil
	}
	if len(c.order) < c.max {
		c.order = append(c.order, peerPubHex)
	} else {
		delete(c.m, c.order[c.next])
		c.order[c.next] = peerPubHex
		c.next = (c.next + 1) % c.max
	}
	c.m[peerPubHex] = ck
	return ck, nil
}

// Len returns the number of cached peers.
func (c *ConversationKeys) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Encrypt encrypts plaintext to peerPubHex.
func (c *ConversationKeys) Encrypt(peerPubHex, plaintext string) (string, error) {
	ck, err := c.Get(peerPubHex)
	if err != nil {
		return "", err
	}
	return NIP44Encrypt(plaintext, ck)
}

// Decrypt decrypts a payload from peerPubHex.
func (c *ConversationKeys) Decrypt(peerPubHex, payload string) (string, error) {
	ck, err := c.Get(peerPubHex)
	if err != nil {
		return "", err
	}
	return NIP44Decrypt(payload, ck)
}
