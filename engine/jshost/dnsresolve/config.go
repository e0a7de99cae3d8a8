// Package dnsresolve is k6's dns option (k6 docs, options reference,
// "DNS"): the run's one caching resolver, shared by every VU, that turns a
// host name into the single address a dial connects to. ttl says how long
// a name's addresses are kept (measured from the lookup, not the records'
// own TTL), policy which IP family is kept, select which one of the kept
// addresses a dial gets.
//
// The decisions are pure functions (Filter, Pick, Fresh) with time passed
// in; Resolver holds the state and calls a LookupFunc at the edge.
package dnsresolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
)

// Select is how one address is picked among a name's addresses.
type Select string

// Policy is which IP family a name's addresses are kept from.
type Policy string

// k6's values (k6 v1.x lib/types, read for behaviour).
const (
	First      Select = "first"
	Random     Select = "random"
	RoundRobin Select = "roundRobin"

	PreferIPv4 Policy = "preferIPv4"
	PreferIPv6 Policy = "preferIPv6"
	OnlyIPv4   Policy = "onlyIPv4"
	OnlyIPv6   Policy = "onlyIPv6"
	Any        Policy = "any"
)

// k6's defaults: ttl=5m,select=random,policy=preferIPv4.
const (
	DefaultTTL    = "5m"
	DefaultSelect = Random
	DefaultPolicy = PreferIPv4
)

// Default is the option's default in k6's text form; --dns given exactly
// this sets nothing, as in k6 (its flag default is this string).
var Default = "ttl=" + DefaultTTL + ",select=" + string(DefaultSelect) + ",policy=" + string(DefaultPolicy)

func parseSelect(s string) (Select, error) {
	switch v := Select(s); v {
	case First, Random, RoundRobin:
		return v, nil
	}
	// k6's text (its enum's): "<v> does not belong to DNSSelect values".
	return "", fmt.Errorf("%s does not belong to DNSSelect values (first, random, roundRobin)", s)
}

func parsePolicy(s string) (Policy, error) {
	switch v := Policy(s); v {
	case PreferIPv4, PreferIPv6, OnlyIPv4, OnlyIPv6, Any:
		return v, nil
	}
	return "", fmt.Errorf("%s does not belong to DNSPolicy values (preferIPv4, preferIPv6, onlyIPv4, onlyIPv6, any)", s)
}

// Config is the dns option of one configuration layer; a nil field is not
// set there. Layers merge field by field (Apply), as k6's do: --dns ttl=5
// keeps a lower layer's select and policy.
type Config struct {
	TTL    *string `json:"ttl,omitempty"`
	Select *Select `json:"select,omitempty"`
	Policy *Policy `json:"policy,omitempty"`
}

// ParseText reads k6's text form, "ttl=1m,select=first,policy=any" (--dns,
// K6_DNS); any subset of the keys, in any order.
func ParseText(s string) (Config, error) {
	var c Config
	if s == Default {
		return c, nil
	}
	for _, kv := range strings.Split(s, ",") {
		// As k6: a key needs an "="; an empty value is read as given
		// ("ttl=" is the default TTL, "select=" a bad select).
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Config{}, fmt.Errorf("no value for key %s", kv)
		}
		switch k {
		case "ttl":
			c.TTL = &v
		case "select":
			sel, err := parseSelect(v)
			if err != nil {
				return Config{}, err
			}
			c.Select = &sel
		case "policy":
			p, err := parsePolicy(v)
			if err != nil {
				return Config{}, err
			}
			c.Policy = &p
		default:
			return Config{}, fmt.Errorf("unknown DNS configuration field: %s", k)
		}
	}
	return c, nil
}

// UnmarshalJSON reads {"ttl": "1m", "select": "first", "policy": "any"}
// (any subset; null is not set; other keys are ignored, as in k6).
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw struct {
		TTL    *string `json:"ttl"`
		Select *string `json:"select"`
		Policy *string `json:"policy"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return errors.New(`want {"ttl": "<duration>", "select": "...", "policy": "..."} with string values`)
	}
	*c = Config{TTL: raw.TTL}
	if raw.Select != nil {
		s, err := parseSelect(*raw.Select)
		if err != nil {
			return err
		}
		c.Select = &s
	}
	if raw.Policy != nil {
		p, err := parsePolicy(*raw.Policy)
		if err != nil {
			return err
		}
		c.Policy = &p
	}
	return nil
}

// Apply lays higher over c field by field.
func (c Config) Apply(higher Config) Config {
	if higher.TTL != nil {
		c.TTL = higher.TTL
	}
	if higher.Select != nil {
		c.Select = higher.Select
	}
	if higher.Policy != nil {
		c.Policy = higher.Policy
	}
	return c
}

// Settings are a Config with the defaults filled in and ttl read.
type Settings struct {
	// TTL is how long a lookup's addresses are reused; 0 caches nothing.
	TTL    time.Duration
	Select Select
	Policy Policy
}

// Settings fills in k6's defaults and reads ttl: "inf" caches for the whole
// run (k6: a year), "0" caches nothing, else a k6 duration ("30s", "1m",
// a bare number of milliseconds); a negative or unreadable one is k6's
// "invalid DNS TTL: <ttl>".
func (c Config) Settings() (Settings, error) {
	s := Settings{Select: DefaultSelect, Policy: DefaultPolicy}
	if c.Select != nil {
		s.Select = *c.Select
	}
	if c.Policy != nil {
		s.Policy = *c.Policy
	}
	ttl := DefaultTTL
	if c.TTL != nil && *c.TTL != "" {
		ttl = *c.TTL
	}
	d, err := parseTTL(ttl)
	if err != nil {
		return Settings{}, err
	}
	s.TTL = d
	return s, nil
}

const forever = 365 * 24 * time.Hour

// parseTTL reads a TTL as k6 does: "inf", "0" (no caching) or a k6
// duration (a bare number is milliseconds; "1d2h" has days), not negative.
func parseTTL(s string) (time.Duration, error) {
	switch s {
	case "inf":
		return forever, nil
	case "0":
		return 0, nil
	}
	d, err := executor.ParseDuration(s)
	if err != nil || d < 0 || strings.TrimSpace(s) != s {
		return 0, fmt.Errorf("invalid DNS TTL: %s", s)
	}
	return d, nil
}
