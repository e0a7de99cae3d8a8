package k6http

import (
	"crypto/md5" //nolint:gosec // RFC 2617 digest auth is MD5 by definition
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strings"
)

// digestAuthorization answers a Digest challenge (RFC 7616, qop=auth) for
// the URL's credentials; k6's auth: "digest" does the same round trip.
func digestAuthorization(challenge, method string, u *url.URL, _ []byte) (string, error) {
	if !strings.HasPrefix(strings.ToLower(challenge), "digest ") {
		return "", errors.New("not a digest challenge")
	}
	p := parseAuthParams(challenge[len("digest "):])
	realm, nonce := p["realm"], p["nonce"]
	if nonce == "" {
		return "", errors.New("digest challenge without nonce")
	}
	var newHash func() hash.Hash
	alg := p["algorithm"]
	switch strings.ToUpper(alg) {
	case "", "MD5":
		newHash = md5.New
	case "SHA-256":
		newHash = sha256.New
	default:
		return "", fmt.Errorf("digest algorithm %q not supported", alg)
	}
	h := func(s string) string {
		x := newHash()
		x.Write([]byte(s))
		return hex.EncodeToString(x.Sum(nil))
	}
	user := u.User.Username()
	pass, _ := u.User.Password()
	uri := u.RequestURI()
	ha1 := h(user + ":" + realm + ":" + pass)
	ha2 := h(method + ":" + uri)
	var b [8]byte
	_, _ = rand.Read(b[:])
	cnonce := hex.EncodeToString(b[:])
	nc := "00000001"
	var resp, qop string
	if strings.Contains(p["qop"], "auth") {
		qop = "auth"
		resp = h(ha1 + ":" + nonce + ":" + nc + ":" + cnonce + ":" + qop + ":" + ha2)
	} else {
		resp = h(ha1 + ":" + nonce + ":" + ha2)
	}
	parts := []string{
		fmt.Sprintf(`username="%s"`, user), fmt.Sprintf(`realm="%s"`, realm),
		fmt.Sprintf(`nonce="%s"`, nonce), fmt.Sprintf(`uri="%s"`, uri),
		fmt.Sprintf(`response="%s"`, resp),
	}
	if alg != "" {
		parts = append(parts, "algorithm="+alg)
	}
	if qop != "" {
		parts = append(parts, "qop="+qop, "nc="+nc, fmt.Sprintf(`cnonce="%s"`, cnonce))
	}
	if op := p["opaque"]; op != "" {
		parts = append(parts, fmt.Sprintf(`opaque="%s"`, op))
	}
	return "Digest " + strings.Join(parts, ", "), nil
}

// parseAuthParams reads k=v and k="v" pairs separated by commas.
func parseAuthParams(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		k := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = s[eq+1:]
		var v string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				v, s = s[1:], ""
			} else {
				v, s = s[1:1+end], s[2+end:]
			}
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				v, s = s, ""
			} else {
				v, s = s[:end], s[end:]
			}
		}
		out[k] = strings.TrimSpace(v)
	}
	return out
}
