package k6http

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/vudialer"
	"github.com/buzzload/buzzload/modules/localaddr"
)

// OptionKeys are the k6 options this module reads from the consolidated
// options (k6 docs, "Options reference"). The engine carries them through its
// config layers untouched and validates them with ParseOptions.
var OptionKeys = []string{
	"batch", "batchPerHost", "maxRedirects", "userAgent", "insecureSkipTLSVerify",
	"tlsVersion", "hosts", "discardResponseBodies", "noConnectionReuse",
	"noVUConnectionReuse", "noCookiesReset", "localIPs", "blacklistIPs", "blockHostnames", "dns",
}

// Options are the k6 options that shape HTTP requests. A nil field was not
// set; Defaults fills them.
type Options struct {
	Batch                 *int64            `json:"batch,omitempty"`
	BatchPerHost          *int64            `json:"batchPerHost,omitempty"`
	MaxRedirects          *int64            `json:"maxRedirects,omitempty"`
	UserAgent             *string           `json:"userAgent,omitempty"`
	InsecureSkipTLSVerify *bool             `json:"insecureSkipTLSVerify,omitempty"`
	TLSVersion            *TLSVersions      `json:"tlsVersion,omitempty"`
	Hosts                 map[string]string `json:"hosts,omitempty"`
	DiscardResponseBodies *bool             `json:"discardResponseBodies,omitempty"`
	NoConnectionReuse     *bool             `json:"noConnectionReuse,omitempty"`
	NoVUConnectionReuse   *bool             `json:"noVUConnectionReuse,omitempty"`
	NoCookiesReset        *bool             `json:"noCookiesReset,omitempty"`
	// LocalIPs is k6's localIPs (localaddr.Parse's format): each VU dials
	// from one of them (LocalAddr).
	LocalIPs *string `json:"localIPs,omitempty"`
	// BlacklistIPs (CIDRs) and BlockHostnames (name patterns) refuse dials,
	// as k6's dialer does (vudialer).
	BlacklistIPs   []string `json:"blacklistIPs,omitempty"`
	BlockHostnames []string `json:"blockHostnames,omitempty"`
	// DNS is k6's dns option: the run's resolver's ttl, select and policy.
	DNS *dnsresolve.Config `json:"dns,omitempty"`
	// Read from the rest of the consolidated options.
	SystemTags []string `json:"systemTags,omitempty"`
	Throw      *bool    `json:"throw,omitempty"`

	localIPs localaddr.List      // LocalIPs expanded by ParseOptions
	rules    *vudialer.Rules     // hosts, blacklistIPs, blockHostnames checked by ParseOptions
	dns      dnsresolve.Settings // DNS with k6's defaults, read by ParseOptions
}

// Dialer is VU vu's dialer (instance-local id, 0 in setup and teardown):
// hosts, blockHostnames, blacklistIPs, names resolved by the run's
// resolver for the dns option (from resolvers; nil: Go's dialer resolves)
// and its localIPs address, counting the bytes moved to count. k6/http and
// k6/experimental/websockets both dial through one, as every module of a
// k6 VU dials through the VU's.
func (o Options) Dialer(vu uint64, resolvers *dnsresolve.Shared, count func(sent, recv int64)) *vudialer.Dialer {
	var res vudialer.Resolver
	if resolvers != nil {
		res = resolvers.For(o.DNSSettings())
	}
	return vudialer.New(o.rules, res, o.LocalAddr(vu), count)
}

// DNSSettings is the dns option with k6's defaults (ttl=5m, select=random,
// policy=preferIPv4) for what it leaves out.
func (o Options) DNSSettings() dnsresolve.Settings {
	if o.dns == (dnsresolve.Settings{}) {
		s, _ := dnsresolve.Config{}.Settings()
		return s
	}
	return o.dns
}

// LocalAddr is the source address of VU vu's dials (instance-local id,
// 0 in setup and teardown) by k6's rule (localaddr.List.ForVU); the zero
// Addr without localIPs.
func (o Options) LocalAddr(vu uint64) netip.Addr { return o.localIPs.ForVU(vu) }

// k6's defaults (k6 docs, options reference: batch 20, batchPerHost 6,
// maxRedirects 10).
const (
	DefaultBatch        = 20
	DefaultBatchPerHost = 6
	DefaultMaxRedirects = 10
)

// TLSVersions is the tlsVersion option: one version ("tls1.2") or a range
// ({"min": "tls1.2", "max": "tls1.3"}).
type TLSVersions struct {
	Min, Max uint16
}

var tlsVersionNames = map[string]uint16{
	//lint:ignore SA1019 k6 accepts the name; Go refuses to negotiate it
	"ssl3.0": tls.VersionSSL30,
	"tls1.0": tls.VersionTLS10, "tls1.1": tls.VersionTLS11,
	"tls1.2": tls.VersionTLS12, "tls1.3": tls.VersionTLS13,
}

func tlsVersionName(v uint16) string {
	for k, n := range tlsVersionNames {
		if n == v {
			return k
		}
	}
	return ""
}

func parseTLSVersion(s string) (uint16, error) {
	if s == "" {
		return 0, nil
	}
	v, ok := tlsVersionNames[s]
	if !ok {
		return 0, fmt.Errorf("unknown TLS version %q (want tls1.0, tls1.1, tls1.2 or tls1.3)", s)
	}
	return v, nil
}

// UnmarshalJSON reads "tls1.2" or {"min": ..., "max": ...}.
func (t *TLSVersions) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := parseTLSVersion(s)
		if err != nil {
			return err
		}
		t.Min, t.Max = v, v
		return nil
	}
	var r struct{ Min, Max string }
	if err := json.Unmarshal(b, &r); err != nil {
		return errors.New(`want a version string ("tls1.2") or {"min": ..., "max": ...}`)
	}
	var err error
	if t.Min, err = parseTLSVersion(r.Min); err != nil {
		return err
	}
	if t.Max, err = parseTLSVersion(r.Max); err != nil {
		return err
	}
	if t.Min != 0 && t.Max != 0 && t.Min > t.Max {
		return fmt.Errorf("min %s is above max %s", r.Min, r.Max)
	}
	return nil
}

// MarshalJSON writes the range form.
func (t TLSVersions) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"min": tlsVersionName(t.Min), "max": tlsVersionName(t.Max)})
}

// ParseOptions reads the HTTP options out of a consolidated options object
// (other keys are ignored) and validates them.
func ParseOptions(raw []byte) (Options, error) {
	var o Options
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return o, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return o, fmt.Errorf("options must be an object: %w", err)
	}
	var errs []error
	for _, k := range append(append([]string(nil), OptionKeys...), "systemTags", "throw") {
		v, ok := fields[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		one, err := json.Marshal(map[string]json.RawMessage{k: v})
		if err == nil {
			err = json.Unmarshal(one, &o)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, cleanJSONErr(err)))
		}
	}
	for _, c := range []struct {
		name string
		v    *int64
	}{{"batch", o.Batch}, {"batchPerHost", o.BatchPerHost}, {"maxRedirects", o.MaxRedirects}} {
		if c.v != nil && *c.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %d", c.name, *c.v))
		}
	}
	if o.LocalIPs != nil {
		l, err := localaddr.Parse(*o.LocalIPs)
		if err != nil {
			errs = append(errs, fmt.Errorf("localIPs: %w", err))
		}
		o.localIPs = l
	}
	hosts := make([]string, 0, len(o.Hosts))
	for h := range o.Hosts {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		if err := checkHostsEntry(h, o.Hosts[h]); err != nil {
			errs = append(errs, fmt.Errorf("hosts: %w", err))
		}
	}
	bl, err := vudialer.ParseBlacklist(o.BlacklistIPs)
	if err != nil {
		errs = append(errs, fmt.Errorf("blacklistIPs: %w", err))
	}
	for _, p := range o.BlockHostnames {
		if err := vudialer.CheckPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("blockHostnames: %w", err))
		}
	}
	var dns dnsresolve.Config
	if o.DNS != nil {
		dns = *o.DNS
	}
	if o.dns, err = dns.Settings(); err != nil {
		errs = append(errs, fmt.Errorf("dns: %w", err))
	}
	if len(errs) > 0 {
		return Options{}, errors.Join(errs...)
	}
	o.rules = &vudialer.Rules{Hosts: o.Hosts, Blocked: o.BlockHostnames, Blacklist: bl}
	return o, nil
}

func cleanJSONErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("want a %s, got a JSON %s", te.Type, te.Value)
	}
	return err
}

// checkHostsEntry validates one hosts mapping: the key is a host name (a
// leading "*." matches subdomains) with an optional port, the value an IP
// or a host name, with an optional port.
func checkHostsEntry(from, to string) error {
	if from == "" {
		return errors.New("empty host name")
	}
	if _, _, err := splitHostPortOpt(from); err != nil {
		return fmt.Errorf("%q: %w", from, err)
	}
	if err := vudialer.CheckHostValue(to); err != nil {
		return fmt.Errorf("%q -> %q: %w", from, to, err)
	}
	return nil
}

// splitHostPortOpt splits "host[:port]"; port is 0 when absent.
func splitHostPortOpt(s string) (string, int, error) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, fmt.Errorf("bad port %q", p)
		}
		return strings.Trim(h, "[]"), n, nil
	}
	return strings.Trim(s, "[]"), 0, nil
}

// settings are Options with the defaults applied.
type settings struct {
	batch, batchPerHost, maxRedirects int
	userAgent                         string
	insecure                          bool
	tls                               TLSVersions
	discard, noReuse, noVUReuse       bool
	noCookiesReset, throw             bool
	sys                               systemTags
	dial                              Options // its Dialer
}

func (o Options) settings(defaultUA string) settings {
	s := settings{
		batch: DefaultBatch, batchPerHost: DefaultBatchPerHost, maxRedirects: DefaultMaxRedirects,
		userAgent: defaultUA, dial: o,
	}
	if o.Batch != nil {
		s.batch = int(*o.Batch)
	}
	if o.BatchPerHost != nil {
		s.batchPerHost = int(*o.BatchPerHost)
	}
	if o.MaxRedirects != nil {
		s.maxRedirects = int(*o.MaxRedirects)
	}
	if o.UserAgent != nil {
		s.userAgent = *o.UserAgent
	}
	if o.TLSVersion != nil {
		s.tls = *o.TLSVersion
	}
	b := func(p *bool) bool { return p != nil && *p }
	s.insecure, s.discard = b(o.InsecureSkipTLSVerify), b(o.DiscardResponseBodies)
	s.noReuse, s.noVUReuse = b(o.NoConnectionReuse), b(o.NoVUConnectionReuse)
	s.noCookiesReset, s.throw = b(o.NoCookiesReset), b(o.Throw)
	s.sys = newSystemTags(o.SystemTags)
	return s
}

// systemTags are the HTTP system tags switched on (k6's systemTags option).
type systemTags map[string]bool

// defaultSystemTags is k6's default set (docs/k6-compat.md §1.11).
var defaultSystemTags = []string{"proto", "subproto", "status", "method", "url", "name", "group", "check", "error", "error_code", "tls_version", "scenario", "service", "expected_response"}

func newSystemTags(names []string) systemTags {
	if names == nil {
		names = defaultSystemTags
	}
	s := systemTags{}
	for _, n := range names {
		s[n] = true
	}
	return s
}
