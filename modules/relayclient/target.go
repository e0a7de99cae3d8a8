package relayclient

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Target says where a client connects and which public URL it claims.
//
// Without Host, WSURL and HTTPURL are dialled as written. With Host (a
// community host from the scenario's host template), the URLs keep their
// scheme and the host is replaced by Host. With Host and ConnectAddr, the
// client dials ConnectAddr in plaintext (ws://, http://) and sends Host in
// the Host header, while the NIP-42 relay tag and the NIP-98 u tags keep the
// public scheme and host, which is what the relay checks them against.
type Target struct {
	WSURL       string // public ws:// or wss:// URL (scenario target.ws_url)
	HTTPURL     string // public http:// or https:// base URL (target.http_url)
	Host        string // community host (authority, may carry a port); "" = the URLs' own host
	ConnectAddr string // host:port dialled instead, in plaintext; used only together with Host
	LocalAddr   string // optional local source IP for every dial (e.g. 127.0.0.2), to spread ephemeral ports
	// Identity supplies NIP-FI assertions for a relay that enforces NIP-FI
	// (nil: none sent): each WebSocket upgrade and signed bridge request
	// carries `Nostr-Federated-Identity: Bearer <its token>`.
	Identity FederatedIdentity
}

// FederatedIdentity supplies the NIP-FI assertion (a compact JWS) for a
// hex pubkey (modules/fitoken; docs/buzz-names.md §b).
type FederatedIdentity interface {
	Assertion(ctx context.Context, pubkey string) (string, error)
}

// FIHeader is NIP-FI's client-attached field.
const FIHeader = "Nostr-Federated-Identity"

// LeaseReason is the close reason of a NIP-FI session lease's end (the
// embedded relay's; Buzz's close frame was not determined): the session
// ends as an ordinary reconnect, not a lost connection.
const LeaseReason = "NIP-FI session lease expired"

// wsEndpoint is a resolved WebSocket target.
type wsEndpoint struct {
	relayURL string // public scheme://host: the NIP-42 relay tag
	dialURL  string // what gorilla dials
	host     string // Host header override ("" = the dial URL's host)
}

// httpEndpoint is a resolved HTTP target.
type httpEndpoint struct {
	public string // public scheme://host[/prefix], without a trailing "/": NIP-98 u tags start with it
	dial   string // scheme://addr[/prefix] requests go to
	host   string // Host header override
}

func checkHost(h string) error {
	if h == "" || strings.ContainsAny(h, "/?#@ \t\r\n") {
		return fmt.Errorf("relay: community host %q is not a bare host[:port]", h)
	}
	return nil
}

func (t Target) mapped() bool { return t.Host != "" && t.ConnectAddr != "" }

func (t Target) ws() (wsEndpoint, error) {
	u, err := url.Parse(strings.TrimSpace(t.WSURL))
	if err != nil {
		return wsEndpoint{}, fmt.Errorf("relay: ws_url %q: %w", t.WSURL, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return wsEndpoint{}, fmt.Errorf("relay: ws_url %q: scheme must be ws or wss", t.WSURL)
	}
	host := u.Host
	if t.Host != "" {
		if err := checkHost(t.Host); err != nil {
			return wsEndpoint{}, err
		}
		host = t.Host
	}
	if host == "" {
		return wsEndpoint{}, fmt.Errorf("relay: ws_url %q has no host", t.WSURL)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	e := wsEndpoint{relayURL: u.Scheme + "://" + host}
	if t.mapped() {
		if _, _, err := net.SplitHostPort(t.ConnectAddr); err != nil {
			return wsEndpoint{}, fmt.Errorf("relay: connect_addr %q: want host:port", t.ConnectAddr)
		}
		e.dialURL = "ws://" + t.ConnectAddr + path
		e.host = host
	} else {
		e.dialURL = u.Scheme + "://" + host + path
	}
	return e, nil
}

func (t Target) http() (httpEndpoint, error) {
	return resolveHTTP(t.HTTPURL, "http_url", t)
}

// resolveHTTP resolves a public base URL with t's host mapping.
func resolveHTTP(raw, what string, t Target) (httpEndpoint, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return httpEndpoint{}, fmt.Errorf("relay: %s %q: %w", what, raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return httpEndpoint{}, fmt.Errorf("relay: %s %q: scheme must be http or https", what, raw)
	}
	host := u.Host
	if t.Host != "" {
		if err := checkHost(t.Host); err != nil {
			return httpEndpoint{}, err
		}
		host = t.Host
	}
	if host == "" {
		return httpEndpoint{}, fmt.Errorf("relay: %s %q has no host", what, raw)
	}
	prefix := strings.TrimSuffix(u.EscapedPath(), "/")
	e := httpEndpoint{public: u.Scheme + "://" + host + prefix}
	if t.mapped() {
		if _, _, err := net.SplitHostPort(t.ConnectAddr); err != nil {
			return httpEndpoint{}, fmt.Errorf("relay: connect_addr %q: want host:port", t.ConnectAddr)
		}
		e.dial = "http://" + t.ConnectAddr + prefix
		e.host = host
	} else {
		e.dial = e.public
	}
	return e, nil
}

// resolveOrigin resolves the operator API origin. It is its own host (no
// community host replaces it); with connect_addr in use it is dialled there
// with its host in the Host header.
func resolveOrigin(raw, connectAddr string) (httpEndpoint, error) {
	e, err := resolveHTTP(raw, "operator origin", Target{})
	if err != nil || connectAddr == "" {
		return e, err
	}
	u, _ := url.Parse(e.public)
	e.host = u.Host
	e.dial = "http://" + connectAddr + u.EscapedPath()
	return e, nil
}

// localAddr parses Target.LocalAddr ("" = let the kernel choose: the zero
// Addr), for localaddr.Bind.
func localAddr(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("relay: local address %q is not an IP", s)
	}
	return a, nil
}
