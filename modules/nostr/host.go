package nostr

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxHostLen bounds a community host (a DNS name's 253 bytes plus a port).
const MaxHostLen = 253 + 6

// ValidateCanonicalHost reports why h is not a canonical community authority,
// as Buzz's provision_community → validate_host refuses it on the raw host
// (crates/buzz-relay/src/handlers/community_provisioning.rs, buzz_core::tenant;
// its tests are the rules): lower-case DNS labels of 1–63 letters, digits and
// inner hyphens (no `_`), no empty label, no trailing dot, no default port
// (:80, :443), a port in 1–65535, or a bracketed IPv6 literal; no scheme,
// path, query, fragment, userinfo, whitespace or control characters.
// NormalizeHost(h) == h for every host it accepts.
func ValidateCanonicalHost(h string) error {
	switch {
	case h == "":
		return fmt.Errorf("host is empty")
	case len(h) > MaxHostLen:
		return fmt.Errorf("host too long: %d bytes (max %d)", len(h), MaxHostLen)
	case strings.ContainsAny(h, "/?#@"):
		return fmt.Errorf("host must be a bare authority (no scheme, path, query, or userinfo)")
	}
	for _, c := range h {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("host contains whitespace or control characters")
		}
		if c >= 'A' && c <= 'Z' {
			return fmt.Errorf("host must be lower case (canonical: %s)", NormalizeHost(h))
		}
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return fmt.Errorf("host has an unterminated IPv6 literal")
		}
		if a, err := netip.ParseAddr(h[1:end]); err != nil || !a.Is6() {
			return fmt.Errorf("host's bracketed literal is not an IPv6 address")
		}
		name, port = "", h[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return fmt.Errorf("host has text after its IPv6 literal")
		}
		port = strings.TrimPrefix(port, ":")
		if port == "" && strings.HasSuffix(h, ":") {
			return fmt.Errorf("host has an empty port")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
		if port == "" {
			return fmt.Errorf("host has an empty port")
		}
	}
	if port != "" || strings.HasSuffix(h, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return fmt.Errorf("host port %q is not a number in 1-65535", port)
		}
		if n == 80 || n == 443 {
			return fmt.Errorf("host must not carry the default port :%d (canonical: %s)", n, NormalizeHost(h))
		}
	}
	if name == "" {
		if !strings.HasPrefix(h, "[") {
			return fmt.Errorf("host has no name")
		}
		return nil
	}
	if strings.HasSuffix(name, ".") {
		return fmt.Errorf("host must not end with a dot (canonical: %s)", NormalizeHost(h))
	}
	for _, label := range strings.Split(name, ".") {
		if err := checkLabel(label); err != nil {
			return err
		}
	}
	return nil
}

func checkLabel(l string) error {
	switch {
	case l == "":
		return fmt.Errorf("host has an empty label")
	case len(l) > 63:
		return fmt.Errorf("host label %q is longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("host label %q starts or ends with a hyphen", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("host label %q has %q: only letters, digits and inner hyphens", l, string(c))
		}
	}
	return nil
}
