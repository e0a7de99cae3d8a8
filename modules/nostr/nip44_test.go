package nostr

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// The official NIP-44 v2 vectors (paulmillr/nip44, nip44.vectors.json). The
// NIP publishes this checksum; a changed file must fail the suite, not
// silently test something else.
const (
	nip44VectorsPath   = "testdata/nip44.vectors.json"
	nip44VectorsSHA256 = "269ed0f69e4c192512cc779e78c555090cebc7c785b609e338a62afc3ce25040"
)

type nip44Vectors struct {
	V2 struct {
		Valid struct {
			GetConversationKey []struct {
				Sec1, Pub2      string
				ConversationKey string `json:"conversation_key"`
			} `json:"get_conversation_key"`
			GetMessageKeys struct {
				ConversationKey string `json:"conversation_key"`
				Keys            []struct {
					Nonce       string
					ChachaKey   string `json:"chacha_key"`
					ChachaNonce string `json:"chacha_nonce"`
					HmacKey     string `json:"hmac_key"`
				}
			} `json:"get_message_keys"`
			CalcPaddedLen  [][2]int `json:"calc_padded_len"`
			EncryptDecrypt []struct {
				Sec1, Sec2      string
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Plaintext       string
				Payload         string
			} `json:"encrypt_decrypt"`
			EncryptDecryptLongMsg []struct {
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Pattern         string
				Repeat          int
				PlaintextSHA256 string `json:"plaintext_sha256"`
				PayloadSHA256   string `json:"payload_sha256"`
			} `json:"encrypt_decrypt_long_msg"`
		}
		Invalid struct {
			EncryptMsgLengths  []int `json:"encrypt_msg_lengths"`
			GetConversationKey []struct {
				Sec1, Pub2, Note string
			} `json:"get_conversation_key"`
			Decrypt []struct {
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Plaintext       string
				Payload         string
				Note            string
			}
		}
	}
}

// loadNIP44Vectors checks the file's checksum before anything reads it.
func loadNIP44Vectors(t testing.TB) *nip44Vectors {
	t.Helper()
	raw, err := os.ReadFile(nip44VectorsPath)
	if err != nil {
		t.Fatalf("read %s: %v", nip44VectorsPath, err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != nip44VectorsSHA256 {
		t.Fatalf("%s: sha256 is %x, want the published %s; the vector file changed", nip44VectorsPath, sum, nip44VectorsSHA256)
	}
	var v nip44Vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", nip44VectorsPath, err)
	}
	return &v
}

func mustHex32(t testing.TB, s string) [32]byte {
	t.Helper()
	var b [32]byte
	if n, err := hex.Decode(b[:], []byte(s)); err != nil || n != 32 {
		t.Fatalf("bad 32-byte hex %q: %v", s, err)
	}
	return b
}

func mustKeys(t testing.TB, secretHex string) *Keys {
	t.Helper()
	k, err := NewKeys(secretHex)
	if err != nil {
		t.Fatalf("keys: %v", err)
	}
	return k
}

func TestNIP44VectorFileChecksum(t *testing.T) {
	v := loadNIP44Vectors(t)
	// Guard against a future refactor that silently tests nothing.
	counts := map[string][2]int{
		"valid.get_conversation_key":     {len(v.V2.Valid.GetConversationKey), 35},
		"valid.get_message_keys":         {len(v.V2.Valid.GetMessageKeys.Keys), 32},
		"valid.calc_padded_len":          {len(v.V2.Valid.CalcPaddedLen), 24},
		"valid.encrypt_decrypt":          {len(v.V2.Valid.EncryptDecrypt), 10},
		"valid.encrypt_decrypt_long_msg": {len(v.V2.Valid.EncryptDecryptLongMsg), 3},
		"invalid.encrypt_msg_lengths":    {len(v.V2.Invalid.EncryptMsgLengths), 4},
		"invalid.get_conversation_key":   {len(v.V2.Invalid.GetConversationKey), 8},
		"invalid.decrypt":                {len(v.V2.Invalid.Decrypt), 12},
	}
	for name, c := range counts {
		if c[0] != c[1] {
			t.Errorf("%s: %d cases decoded, want %d", name, c[0], c[1])
		}
	}
}

func TestNIP44ConversationKeyVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	for i, c := range v.V2.Valid.GetConversationKey {
		ck, err := mustKeys(t, c.Sec1).ConversationKey(c.Pub2)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if hex.EncodeToString(ck[:]) != c.ConversationKey {
			t.Errorf("case %d: conversation key %x, want %s", i, ck, c.ConversationKey)
		}
	}
	for i, c := range v.V2.Invalid.GetConversationKey {
		k, err := NewKeys(c.Sec1)
		if err == nil {
			_, err = k.ConversationKey(c.Pub2)
		}
		if err == nil {
			t.Errorf("invalid case %d (%s): accepted", i, c.Note)
		}
	}
}

func TestNIP44MessageKeyVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	ck := mustHex32(t, v.V2.Valid.GetMessageKeys.ConversationKey)
	for i, c := range v.V2.Valid.GetMessageKeys.Keys {
		nonce := mustHex32(t, c.Nonce)
		key, cn, hk, err := nip44MessageKeys(&ck, nonce[:])
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(key[:]) != c.ChachaKey || hex.EncodeToString(cn[:]) != c.ChachaNonce || hex.EncodeToString(hk[:]) != c.HmacKey {
			t.Errorf("case %d: keys %x %x %x, want %s %s %s", i, key, cn, hk, c.ChachaKey, c.ChachaNonce, c.HmacKey)
		}
	}
	if _, _, _, err := nip44MessageKeys(&ck, make([]byte, 31)); err == nil {
		t.Error("a 31-byte nonce must be refused")
	}
}

func TestNIP44PaddedLenVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	for _, c := range v.V2.Valid.CalcPaddedLen {
		if got := NIP44PaddedLen(c[0]); got != c[1] {
			t.Errorf("NIP44PaddedLen(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

func TestNIP44EncryptDecryptVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	for i, c := range v.V2.Valid.EncryptDecrypt {
		k1, k2 := mustKeys(t, c.Sec1), mustKeys(t, c.Sec2)
		ck1, err1 := k1.ConversationKey(k2.PubKey())
		ck2, err2 := k2.ConversationKey(k1.PubKey())
		if err1 != nil || err2 != nil {
			t.Fatalf("case %d: %v %v", i, err1, err2)
		}
		if hex.EncodeToString(ck1[:]) != c.ConversationKey || ck1 != ck2 {
			t.Errorf("case %d: conversation keys %x / %x, want %s both ways", i, ck1, ck2, c.ConversationKey)
		}
		payload, err := NIP44EncryptWithNonce(c.Plaintext, ck1, mustHex32(t, c.Nonce))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if payload != c.Payload {
			t.Errorf("case %d: payload\n got %s\nwant %s", i, payload, c.Payload)
		}
		pt, err := NIP44Decrypt(c.Payload, ck2)
		if err != nil || pt != c.Plaintext {
			t.Errorf("case %d: decrypt = %q, %v; want %q", i, pt, err, c.Plaintext)
		}
	}
}

func TestNIP44LongMessageVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	for i, c := range v.V2.Valid.EncryptDecryptLongMsg {
		pt := strings.Repeat(c.Pattern, c.Repeat)
		if sum := sha256.Sum256([]byte(pt)); hex.EncodeToString(sum[:]) != c.PlaintextSHA256 {
			t.Fatalf("case %d: plaintext sha256 %x, want %s", i, sum, c.PlaintextSHA256)
		}
		ck := mustHex32(t, c.ConversationKey)
		payload, err := NIP44EncryptWithNonce(pt, ck, mustHex32(t, c.Nonce))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if sum := sha256.Sum256([]byte(payload)); hex.EncodeToString(sum[:]) != c.PayloadSHA256 {
			t.Errorf("case %d: payload sha256 %x, want %s", i, sum, c.PayloadSHA256)
		}
		back, err := NIP44Decrypt(payload, ck)
		if err != nil || back != pt {
			t.Errorf("case %d: round trip failed: %v", i, err)
		}
	}
}

func TestNIP44InvalidVectors(t *testing.T) {
	v := loadNIP44Vectors(t)
	ck := mustHex32(t, v.V2.Valid.EncryptDecrypt[0].ConversationKey)
	for _, n := range v.V2.Invalid.EncryptMsgLengths {
		// 10 MB is cheap to allocate once; it must be refused before any work.
		if _, err := NIP44Encrypt(strings.Repeat("a", n), ck); !errors.Is(err, ErrNIP44Plaintext) {
			t.Errorf("encrypt %d bytes: err = %v, want ErrNIP44Plaintext", n, err)
		}
	}
	want := map[string]error{
		"unknown encryption version":   ErrNIP44Version,
		"unknown encryption version 0": ErrNIP44Version,
		"invalid base64":               ErrNIP44Base64,
		"invalid MAC":                  ErrNIP44MAC,
		"invalid padding":              ErrNIP44Padding,
		"invalid payload length: 0":    ErrNIP44Version, // empty payload: no version byte to read
	}
	for i, c := range v.V2.Invalid.Decrypt {
		pt, err := NIP44Decrypt(c.Payload, mustHex32(t, c.ConversationKey))
		if err == nil {
			t.Errorf("invalid decrypt %d (%s): accepted as %q", i, c.Note, pt)
			continue
		}
		w, ok := want[c.Note]
		if !ok && strings.HasPrefix(c.Note, "invalid payload length") {
			w = ErrNIP44Size
		}
		if w != nil && !errors.Is(err, w) {
			t.Errorf("invalid decrypt %d (%s): err = %v, want %v", i, c.Note, err, w)
		}
	}
}

func TestNIP44RoundTripAndTamper(t *testing.T) {
	a, b := DeriveKeys("nip44", RoleAgent, 1), DeriveKeys("nip44", RoleAgentOwner, 1)
	ca, cb := NewConversationKeys(a, 4), NewConversationKeys(b, 4)
	for _, pt := range []string{"x", strings.Repeat("é", 100), strings.Repeat("z", NIP44MaxPlaintext)} {
		p, err := ca.Encrypt(b.PubKey(), pt)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := ca.Encrypt(b.PubKey(), pt)
		if p == p2 {
			t.Error("two encryptions of one plaintext must differ (random nonce)")
		}
		got, err := cb.Decrypt(a.PubKey(), p)
		if err != nil || got != pt {
			t.Fatalf("round trip of %d bytes: %v", len(pt), err)
		}
		// Flip one bit of the ciphertext, then of the MAC: both must be caught.
		for _, at := range []int{40, -1} {
			raw, _ := base64.StdEncoding.DecodeString(p)
			if at < 0 {
				at = len(raw) - 1
			}
			raw[at] ^= 1
			if _, err := cb.Decrypt(a.PubKey(), base64.StdEncoding.EncodeToString(raw)); !errors.Is(err, ErrNIP44MAC) {
				t.Errorf("bit flip at byte %d: err = %v, want ErrNIP44MAC", at, err)
			}
		}
	}
	// A third key cannot read it.
	c := DeriveKeys("nip44", RoleHuman, 9)
	p, _ := ca.Encrypt(b.PubKey(), "secret")
	if _, err := NewConversationKeys(c, 1).Decrypt(a.PubKey(), p); !errors.Is(err, ErrNIP44MAC) {
		t.Errorf("wrong key: err = %v, want ErrNIP44MAC", err)
	}
}

func TestConversationKeysBoundedAndConcurrent(t *testing.T) {
	me := DeriveKeys("cache", RoleHuman, 0)
	const max = 3
	cache := NewConversationKeys(me, max)
	peers := make([]*Keys, 8)
	for i := range peers {
		peers[i] = DeriveKeys("cache", RoleHuman, i+1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(peers))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range peers {
				got, err := cache.Get(p.PubKey())
				if err != nil {
					errs <- err
					return
				}
				want, _ := p.ConversationKey(me.PubKey())
				if got != want {
					errs <- errors.New("cached key differs from the peer's own derivation")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := cache.Len(); n > max || n == 0 {
		t.Errorf("cache holds %d entries, bound is %d", n, max)
	}
	// The most recently inserted peer is still cached and is served from the map.
	last := peers[len(peers)-1].PubKey()
	cache.mu.RLock()
	_, ok := cache.m[last]
	cache.mu.RUnlock()
	if !ok {
		t.Error("the newest peer must be cached")
	}
	if _, err := cache.Get("zz"); err == nil {
		t.Error("a bad peer key must be an error")
	}
	if cache.Len() > max {
		t.Error("a failed lookup must not grow the cache")
	}
}

func TestNIP44DecryptNeverPanicsOnShortData(t *testing.T) {
	ck := [32]byte{1}
	for _, p := range []string{"A", "Ag==", strings.Repeat("A", 132), "Ag" + strings.Repeat("A", 130), string(bytes.Repeat([]byte{'/'}, 200))} {
		if _, err := NIP44Decrypt(p, ck); err == nil {
			t.Errorf("payload %q accepted", p[:min(len(p), 20)])
		}
	}
}
