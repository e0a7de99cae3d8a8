package nostr

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// AuthEvent builds and signs a NIP-42 AUTH event: kind 22242, empty content,
// exactly one `relay` and one `challenge` tag, created_at = at. An optional
// NIP-OA tag (["auth", owner, conditions, sig]) marks an agent connection.
func AuthEvent(k *Keys, relayURL, challenge string, at time.Time, oaTag []string) (*Event, error) {
	tags := [][]string{{"relay", relayURL}, {"challenge", challenge}}
	if oaTag != nil {
		tags = append(tags, oaTag)
	}
	return k.NewEvent(KindClientAuth, tags, "", at)
}

// AuthCheck is the relay side of NIP-42 as Buzz applies it.
type AuthCheck struct {
	Challenge   string
	RelayURL    string   // the expected URL: scheme://normalised-host (no path)
	AlsoAccept  []string // e.g. a pairing relay URL
	Now         time.Time
	MaxSkew     time.Duration // Buzz: 60 s
	AllowOATags bool          // accept one NIP-OA `auth` tag
}

// ErrAuthVerification is what every NIP-42 failure maps to on the wire
// ("auth-required: verification failed"); the wrapped detail is for logs and tests.
var ErrAuthVerification = errors.New("verification failed")

// VerifyAuthEvent checks a kind-22242 event against c. On success it returns
// the optional NIP-OA tag (nil when absent), not yet verified.
func VerifyAuthEvent(e *Event, c AuthCheck) (oa []string, err error) {
	fail := func(format string, a ...any) ([]string, error) {
		return nil, fmt.Errorf("%w: %s", ErrAuthVerification, fmt.Sprintf(format, a...))
	}
	if e.Kind != KindClientAuth {
		return fail("kind %d is not %d", e.Kind, KindClientAuth)
	}
	var relays, challenges []string
	for _, t := range e.Tags {
		if len(t) == 0 {
			continue
		}
		switch t[0] {
		case "relay":
			if len(t) < 2 {
				return fail("empty relay tag")
			}
			relays = append(relays, t[1])
		case "challenge":
			if len(t) < 2 {
				return fail("empty challenge tag")
			}
			challenges = append(challenges, t[1])
		case "auth":
			if !c.AllowOATags || oa != nil {
				return fail("unexpected or duplicate auth tag")
			}
			oa = t
		}
	}
	if len(relays) != 1 || len(challenges) != 1 {
		return fail("want exactly one relay and one challenge tag, got %d and %d", len(relays), len(challenges))
	}
	if challenges[0] != c.Challenge {
		return fail("wrong challenge")
	}
	ok := SameRelayURL(relays[0], c.RelayURL)
	for _, alt := range c.AlsoAccept {
		ok = ok || SameRelayURL(relays[0], alt)
	}
	if !ok {
		return fail("relay %q does not match %q", trim(relays[0]), c.RelayURL)
	}
	if d := c.Now.Sub(time.Unix(e.CreatedAt, 0)); d > c.MaxSkew || d < -c.MaxSkew {
		return fail("created_at is %v away from now", d.Round(time.Second))
	}
	if err := e.Verify(); err != nil {
		return fail("%v", err)
	}
	return oa, nil
}

// NormalizeHost applies Buzz's host normalisation: lower-case, one trailing
// dot removed, default ports :80 and :443 removed, any other port kept.
func NormalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return strings.TrimSuffix(h, ".")
	}
	host = strings.TrimSuffix(host, ".")
	if port == "80" || port == "443" || port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// loopbackAlias maps localhost and ::1 to 127.0.0.1, as Buzz does when it
// compares relay and NIP-98 URLs.
func loopbackAlias(host string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, ""
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" || h == "::1" {
		h = "127.0.0.1"
	}
	if port == "" {
		return h
	}
	return net.JoinHostPort(h, port)
}

// SameRelayURL compares two relay URLs the way Buzz does: parsed, host
// normalised, loopback aliases equal, a trailing "/" ignored.
func SameRelayURL(a, b string) bool {
	ca, ok1 := canonicalURL(a)
	cb, ok2 := canonicalURL(b)
	return ok1 && ok2 && ca == cb
}

func canonicalURL(s string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", false
	}
	host := loopbackAlias(NormalizeHost(u.Host))
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	out := strings.ToLower(u.Scheme) + "://" + host + path
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	return out, true
}
