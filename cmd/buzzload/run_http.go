package main

import (
	"encoding/json"

	"github.com/mstoykov/envconfig"
	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
)

// httpFlags are k6 run's HTTP flags and their K6_* variables (k6-compat.md
// §8.1); they land in engine.Options.HTTP under k6's option names.
type httpFlags struct {
	userAgent, localIPs, dns                  string
	batch, batchPerHost, maxRedirects         int64
	insecure, noReuse, noVUReuse, discardBody bool
	blacklistIPs, blockHostnames              []string
}

type httpEnv struct {
	UserAgent    *string `envconfig:"K6_USER_AGENT"`
	Batch        *int64  `envconfig:"K6_BATCH"`
	BatchPerHost *int64  `envconfig:"K6_BATCH_PER_HOST"`
	MaxRedirects *int64  `envconfig:"K6_MAX_REDIRECTS"`
	Insecure     *bool   `envconfig:"K6_INSECURE_SKIP_TLS_VERIFY"`
	NoReuse      *bool   `envconfig:"K6_NO_CONNECTION_REUSE"`
	NoVUReuse    *bool   `envconfig:"K6_NO_VU_CONNECTION_REUSE"`
	DiscardBody  *bool   `envconfig:"K6_DISCARD_RESPONSE_BODIES"`
	LocalIPs     *string `envconfig:"K6_LOCAL_IPS"`
	// Comma-separated, as k6 reads them.
	BlacklistIPs   []string `envconfig:"K6_BLACKLIST_IPS"`
	BlockHostnames []string `envconfig:"K6_BLOCK_HOSTNAMES"`
	// k6's text form, "ttl=1m,select=roundRobin,policy=any".
	DNS *string `envconfig:"K6_DNS"`
}

func (h *httpFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&h.userAgent, "user-agent", "", "User-Agent header of k6/http requests (default buzzload/<version>)")
	fs.Int64Var(&h.batch, "batch", 20, "max parallel requests of one http.batch call")
	fs.Int64Var(&h.batchPerHost, "batch-per-host", 6, "max parallel http.batch requests per host")
	fs.Int64Var(&h.maxRedirects, "max-redirects", 10, "redirects k6/http follows")
	fs.BoolVar(&h.insecure, "insecure-skip-tls-verify", false, "do not verify TLS certificates")
	fs.BoolVar(&h.noReuse, "no-connection-reuse", false, "no HTTP keep-alive")
	fs.BoolVar(&h.noVUReuse, "no-vu-connection-reuse", false, "close a VU's HTTP connections after every iteration")
	fs.BoolVar(&h.discardBody, "discard-response-bodies", false, "read and drop response bodies (responseType none)")
	fs.StringVar(&h.localIPs, "local-ips", "", "source IPs, ranges and/or CIDRs each VU dials from, e.g. '192.168.220.1,192.168.0.10-192.168.0.25', 'fd:1::0/120'; VU n takes the n-th, round robin")
	fs.StringSliceVar(&h.blacklistIPs, "blacklist-ip", nil, "blacklist an `ip range` (CIDR) from being called, k6/http and WebSockets")
	fs.StringSliceVar(&h.blockHostnames, "block-hostnames", nil, "block a case-insensitive hostname `pattern`, with optional leading wildcard, from being called")
	fs.StringVar(&h.dns, "dns", dnsresolve.Default, "DNS resolver configuration, shared by every VU: ttl 'inf' (cache for the run), '0' (no cache) or a duration "+
		"(milliseconds without a unit); select 'first', 'random' or 'roundRobin' (the one address a dial gets); "+
		"policy 'preferIPv4', 'preferIPv6', 'onlyIPv4', 'onlyIPv6' or 'any'")
}

// layers returns the env layer and the CLI layer of the HTTP options.
func (h *httpFlags) layers(fs *pflag.FlagSet, environ []string) (env, cli map[string]json.RawMessage, err error) {
	var e httpEnv
	if err := envconfig.Process("", &e, lookupFrom(environ)); err != nil {
		return nil, nil, optErr("environment: %w", err)
	}
	env, cli = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	put := func(m map[string]json.RawMessage, k string, v any) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	for _, x := range []struct {
		key, flag string
		ev        any
		fv        any
	}{
		{"userAgent", "user-agent", e.UserAgent, h.userAgent},
		{"batch", "batch", e.Batch, h.batch},
		{"batchPerHost", "batch-per-host", e.BatchPerHost, h.batchPerHost},
		{"maxRedirects", "max-redirects", e.MaxRedirects, h.maxRedirects},
		{"insecureSkipTLSVerify", "insecure-skip-tls-verify", e.Insecure, h.insecure},
		{"noConnectionReuse", "no-connection-reuse", e.NoReuse, h.noReuse},
		{"noVUConnectionReuse", "no-vu-connection-reuse", e.NoVUReuse, h.noVUReuse},
		{"discardResponseBodies", "discard-response-bodies", e.DiscardBody, h.discardBody},
		{"localIPs", "local-ips", e.LocalIPs, h.localIPs},
		{"blacklistIPs", "blacklist-ip", e.BlacklistIPs, h.blacklistIPs},
		{"blockHostnames", "block-hostnames", e.BlockHostnames, h.blockHostnames},
	} {
		// Empty lists that k6 reads as "not set" in these sources only (a
		// lower layer's stays): K6_BLOCK_HOSTNAMES="" (its text parser's
		// empty trie) and --blacklist-ip= (k6 appends only parsed CIDRs);
		// --block-hostnames= clears the list, as in k6. An empty localIPs
		// is unset in every layer (engine.Options.Apply).
		if !isNilPtr(x.ev) && !(x.key == "blockHostnames" && isEmptyList(x.ev)) {
			put(env, x.key, x.ev)
		}
		if fs.Changed(x.flag) && !(x.key == "blacklistIPs" && isEmptyList(x.fv)) {
			put(cli, x.key, x.fv)
		}
	}
	// dns merges field by field across layers (engine.Options.Apply), so
	// each layer holds only the fields it sets.
	for _, x := range []struct {
		name string
		v    *string
		m    map[string]json.RawMessage
		set  bool
	}{{"K6_DNS", e.DNS, env, e.DNS != nil}, {"--dns", &h.dns, cli, fs.Changed("dns")}} {
		if !x.set || *x.v == "" {
			continue
		}
		c, err := dnsresolve.ParseText(*x.v)
		if err == nil {
			_, err = c.Settings()
		}
		if err != nil {
			return nil, nil, optErr("%s %q: dns: %w", x.name, *x.v, err)
		}
		if c != (dnsresolve.Config{}) {
			put(x.m, "dns", c)
		}
	}
	return env, cli, nil
}

func isEmptyList(v any) bool {
	l, ok := v.([]string)
	return ok && len(l) == 0
}

func isNilPtr(v any) bool {
	switch p := v.(type) {
	case *string:
		return p == nil
	case *int64:
		return p == nil
	case *bool:
		return p == nil
	case []string:
		return p == nil
	}
	return true
}
