package nostr

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// HTTPAuth builds a NIP-98 Authorization header for one request: kind 27235
// with `u` (public scheme + Host + path, plus `?query` verbatim), an upper-case
// `method`, `payload` = hex SHA-256 of the exact body bytes (also for an empty
// body, so routes that require it accept it), and a random `nonce` so two
// identical requests in one second never share an id (Buzz's replay guard
// refuses a repeated id for 120 s). The value is "Nostr " + base64(event JSON).
func HTTPAuth(k *Keys, method, u string, body []byte, at time.Time) (string, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	tags := [][]string{
		{"u", u},
		{"method", strings.ToUpper(method)},
		{"payload", hex.EncodeToString(sum[:])},
		{"nonce", hex.EncodeToString(nonce[:])},
	}
	e, err := k.NewEvent(KindHTTPAuth, tags, "", at)
	if err != nil {
		return "", err
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(e.AppendJSON(nil)), nil
}

// Errors of the NIP-98 check. Their texts are Buzz's 401 messages.
var (
	ErrMissingNostrAuth = errors.New("missing Nostr auth")
	ErrBadBase64        = errors.New("invalid base64 in Nostr auth")
)

// ParseHTTPAuth decodes an Authorization header value into its event.
func ParseHTTPAuth(header string) (*Event, error) {
	header = strings.TrimSpace(header)
	if len(header) < 6 || !strings.EqualFold(header[:6], "Nostr ") {
		return nil, ErrMissingNostrAuth
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header[6:]))
	if err != nil {
		return nil, ErrBadBase64
	}
	e, err := ParseEvent(raw)
	if err != nil {
		return nil, fmt.Errorf("NIP-98: invalid event JSON")
	}
	return e, nil
}

// HTTPCheck is the relay side of NIP-98.
type HTTPCheck struct {
	Method         string
	URL            string // expected: scheme://normalised-host/path[?query]
	Body           []byte
	RequirePayload bool // operator routes with a body, /buzz/v1 POSTs
	Now            time.Time
	MaxSkew        time.Duration // Buzz: 60 s
}

// VerifyHTTPAuth checks a NIP-98 event. The returned error text is the
// relay's 401 message ("NIP-98: <detail>").
func VerifyHTTPAuth(e *Event, c HTTPCheck) error {
	if e.Kind != KindHTTPAuth {
		return errors.New("NIP-98: bad kind")
	}
	if d := c.Now.Sub(time.Unix(e.CreatedAt, 0)); d > c.MaxSkew || d < -c.MaxSkew {
		return errors.New("NIP-98: expired")
	}
	if u := e.TagValue("u"); !SameRelayURL(u, c.URL) {
		return errors.New("NIP-98: url mismatch")
	}
	// Case-insensitive, as Buzz's nip98.rs compares it.
	if m := e.TagValue("method"); m == "" || !strings.EqualFold(m, c.Method) {
		return errors.New("NIP-98: method mismatch")
	}
	if p := e.Tag("payload"); p != nil {
		sum := sha256.Sum256(c.Body)
		if len(p) < 2 || !strings.EqualFold(p[1], hex.EncodeToString(sum[:])) {
			return errors.New("NIP-98: payload mismatch")
		}
	} else if c.RequirePayload {
		return errors.New("NIP-98: missing payload tag")
	}
	if err := e.Verify(); err != nil {
		return errors.New("NIP-98: bad signature")
	}
	return nil
}
