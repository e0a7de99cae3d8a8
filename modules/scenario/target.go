package scenario

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/modules/fitoken"
	"github.com/buzzload/buzzload/modules/nostr"
)

// Embedded reports whether the scenario names no relay, so the run targets
// the embedded local relay. The runner that starts it sets Target.WSURL and
// Target.HTTPURL on its copy of the scenario before asking for endpoints.
func (s *Scenario) Embedded() bool {
	return s.Target.WSURL == "" && s.Target.HTTPURL == ""
}

// CommunityHost is community n's host from target.community_host_template,
// with {run} replaced by run_id and {n} by n in decimal. It is "" without a
// template: every community is then reached through ws_url and http_url as
// written.
func (s *Scenario) CommunityHost(n int) string {
	return ExpandHostTemplate(s.Target.CommunityHostTemplate, s.RunID, n)
}

// ExpandHostTemplate replaces {run} and {n} in a host template.
func ExpandHostTemplate(tmpl, runID string, n int) string {
	if tmpl == "" {
		return ""
	}
	return strings.NewReplacer("{run}", runID, "{n}", strconv.Itoa(n)).Replace(tmpl)
}

// CommunityHosts is every community's host, in community order; nil without
// a template.
func (s *Scenario) CommunityHosts() []string {
	if s.Target.CommunityHostTemplate == "" {
		return nil
	}
	out := make([]string, s.Shape.Communities)
	for i := range out {
		out[i] = s.CommunityHost(i)
	}
	return out
}

// Endpoint is how a client reaches one community.
type Endpoint struct {
	// WSURL and HTTPURL are the public URLs: the Host header, the NIP-98 u
	// tag and the NIP-42 relay tag are built from them.
	WSURL, HTTPURL string
	// Host is the Host header value (the community host).
	Host string
	// DialAddr, when not empty, is the host:port to dial in plaintext instead
	// of resolving Host (target.connect_addr with a host template).
	DialAddr string
	// Identity supplies NIP-FI assertions (nil: none are sent).
	Identity FederatedIdentity
}

// FederatedIdentity supplies the NIP-FI assertion for a hex pubkey
// (relayclient.FederatedIdentity's method; modules/fitoken).
type FederatedIdentity interface {
	Assertion(ctx context.Context, pubkey string) (string, error)
}

// SetFederatedIdentity prepares the run's NIP-FI token source from the
// environment (BUZZLOAD_NIP_FI_TOKENS_FILE, BUZZLOAD_NIP_FI_TOKEN_COMMAND)
// or [target] nip_fi_tokens_file / nip_fi_token_command (a relative file
// from the scenario's directory). Neither set: none.
func (s *Scenario) SetFederatedIdentity(lookupEnv func(string) (string, bool)) error {
	file, command := s.Target.NIPFITokensFile, s.Target.NIPFITokenCommand
	if lookupEnv != nil {
		if v, ok := lookupEnv("BUZZLOAD_NIP_FI_TOKENS_FILE"); ok && v != "" {
			file, command = v, ""
		} else if v, ok := lookupEnv("BUZZLOAD_NIP_FI_TOKEN_COMMAND"); ok && v != "" {
			file, command = "", v
		}
	}
	switch {
	case file != "" && command != "":
		return errors.New("target.nip_fi_tokens_file and target.nip_fi_token_command: set one, not both")
	case file != "":
		if !filepath.IsAbs(file) && s.File != "" && file == s.Target.NIPFITokensFile {
			file = filepath.Join(filepath.Dir(s.File), file)
		}
		src, err := fitoken.FromFile(file)
		if err != nil {
			return err
		}
		s.fi = src
	case command != "":
		s.fi = fitoken.FromCommand(command)
	}
	return nil
}

// Endpoint is community n's endpoint. With a host template the URLs keep
// ws_url's and http_url's schemes and paths and take the community host;
// without one they are ws_url and http_url as written and connect_addr has no
// effect.
func (s *Scenario) Endpoint(n int) Endpoint {
	t := s.Target
	if t.CommunityHostTemplate == "" {
		e := Endpoint{WSURL: t.WSURL, HTTPURL: t.HTTPURL, Identity: s.fi}
		if u, err := url.Parse(t.WSURL); err == nil {
			e.Host = u.Host
		}
		return e
	}
	host := s.CommunityHost(n)
	return Endpoint{
		WSURL:    withHost(t.WSURL, "ws", host),
		HTTPURL:  withHost(t.HTTPURL, "http", host),
		Host:     host,
		DialAddr: t.ConnectAddr,
		Identity: s.fi,
	}
}

func withHost(raw, scheme, host string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		u = &url.URL{Scheme: scheme}
	}
	u.Host = host
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// ErrNoOperatorKey means neither the operator key environment variable nor
// the key file holds a key.
var ErrNoOperatorKey = errors.New("no operator key")

// OperatorKey loads the relay operator's key from the environment variable
// named by target.operator_key_env (BUZZLOAD_OPERATOR_KEY by default) when it
// is set and not empty, otherwise from target.operator_key_file (relative to
// the scenario file). The key is 64 hex characters or NIP-19 nsec1…;
// surrounding whitespace is ignored. lookupEnv is os.LookupEnv in production. Errors name the source,
// never the key. Against the embedded relay, callers derive the operator
// instead (nostr.DeriveKeys(run_id, nostr.RoleOperator, 0)).
func (s *Scenario) OperatorKey(lookupEnv func(string) (string, bool)) (*nostr.Keys, error) {
	t := s.Target
	if t.OperatorKeyEnv != "" && lookupEnv != nil {
		if v, ok := lookupEnv(t.OperatorKeyEnv); ok && strings.TrimSpace(v) != "" {
			k, err := nostr.NewKeys(v)
			if err != nil {
				return nil, fmt.Errorf("operator key from $%s: %w", t.OperatorKeyEnv, err)
			}
			return k, nil
		}
	}
	if t.OperatorKeyFile != "" {
		path := s.resolvePath(t.OperatorKeyFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("operator key file %s: %w", path, err)
		}
		k, err := nostr.NewKeys(string(b))
		if err != nil {
			return nil, fmt.Errorf("operator key file %s: %w", path, err)
		}
		return k, nil
	}
	where := "target.operator_key_file is not set"
	if t.OperatorKeyEnv != "" {
		where = "$" + t.OperatorKeyEnv + " is empty and " + where
	}
	return nil, fmt.Errorf("%s: %w (%s)", s.File, ErrNoOperatorKey, where)
}

// checkHost reports why h (host or host:port) is not a usable host, or "".
func checkHost(h string) (reason string, hasPort bool) {
	host := h
	if strings.Contains(h, ":") {
		hh, port, err := net.SplitHostPort(h)
		if err != nil {
			return "is not a host or host:port", false
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return "has a port that is not 1-65535", true
		}
		host, hasPort = hh, true
	}
	if host == "" || len(host) > 253 {
		return "has an empty or over-long host name", hasPort
	}
	if net.ParseIP(host) != nil {
		return "", hasPort
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "is not a valid host name", hasPort
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return "is not a valid host name", hasPort
			}
		}
	}
	return "", hasPort
}
