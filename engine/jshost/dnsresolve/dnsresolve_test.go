package dnsresolve

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func str(a []netip.Addr) string {
	var b []string
	for _, x := range a {
		b = append(b, x.String())
	}
	return strings.Join(b, ",")
}

func TestParseTextAndJSON(t *testing.T) {
	c, err := ParseText("ttl=inf,select=roundRobin,policy=onlyIPv6")
	if err != nil || *c.TTL != "inf" || *c.Select != RoundRobin || *c.Policy != OnlyIPv6 {
		t.Fatalf("got %+v, %v", c, err)
	}
	c, err = ParseText("select=first")
	if err != nil || c.TTL != nil || c.Policy != nil || *c.Select != First {
		t.Fatalf("a subset sets only its keys: %+v, %v", c, err)
	}
	// "ttl=" is k6's default TTL (its parser reads "" as 5m).
	if c, err := ParseText("ttl="); err != nil || c.TTL == nil || *c.TTL != "" {
		t.Fatalf(`ttl=: %+v, %v; want an empty TTL (the default)`, c, err)
	} else if st, err := c.Settings(); err != nil || st.TTL != 5*time.Minute {
		t.Fatalf("ttl= gives %v, %v; want 5m", st.TTL, err)
	}
	if c, err := ParseText(Default); err != nil || c != (Config{}) {
		t.Fatalf("k6's default text sets nothing: %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		"ttl=5s,select=":       " does not belong to DNSSelect values", // k6 reads the empty value
		"policy=":              " does not belong to DNSPolicy values",
		"ttl":                  "no value for key ttl",
		"ttl=0,blah=nope":      "unknown DNS configuration field: blah",
		"select=fastest":       "fastest does not belong to DNSSelect values",
		"policy=ipv4":          "ipv4 does not belong to DNSPolicy values",
		"policy=PreferIPv4":    "PreferIPv4 does not belong to DNSPolicy values", // case matters, as in k6
		"select=first,ttl=1m,": "no value for key ",
	} {
		if _, err := ParseText(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseText(%q) = %v, want %q...", in, err, want)
		}
	}
	var j Config
	if err := json.Unmarshal([]byte(`{"ttl":"30s","select":null,"policy":"any","x":1}`), &j); err != nil || *j.TTL != "30s" || j.Select != nil || *j.Policy != Any {
		t.Fatalf("json: %+v, %v", j, err)
	}
	if err := json.Unmarshal([]byte(`{"select":"last"}`), &j); err == nil || !strings.Contains(err.Error(), "last does not belong to DNSSelect") {
		t.Fatalf("json bad select: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"ttl":5}`), &j); err == nil {
		t.Fatal("a numeric ttl is refused, as k6's string field refuses it")
	}
}

// Layers merge field by field: k6's test has config {ttl 60, select first},
// env ttl=30,select=random,policy=any, flag ttl=5 → ttl 5, random, any.
func TestApplyFieldByField(t *testing.T) {
	var file Config
	_ = json.Unmarshal([]byte(`{"ttl":"60","select":"first"}`), &file)
	env, _ := ParseText("ttl=30,select=random,policy=any")
	cli, _ := ParseText("ttl=5")
	s, err := file.Apply(env).Apply(cli).Settings()
	if err != nil || s != (Settings{TTL: 5 * time.Millisecond, Select: Random, Policy: Any}) {
		t.Fatalf("got %+v, %v", s, err)
	}
	s, _ = file.Settings()
	if s.Policy != PreferIPv4 || s.Select != First || s.TTL != 60*time.Millisecond {
		t.Fatalf("defaults under a partial layer: %+v", s)
	}
}

func TestSettingsTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 5 * time.Minute, "inf": 365 * 24 * time.Hour, "0": 0, "0s": 0, "1500": 1500 * time.Millisecond,
		"1m30s": 90 * time.Second, "1d": 24 * time.Hour, "1d2h": 26 * time.Hour,
	} {
		s, err := Config{TTL: &in}.Settings()
		if err != nil || s.TTL != want {
			t.Errorf("ttl %q: %v, %v; want %v", in, s.TTL, err, want)
		}
	}
	if s, _ := (Config{}).Settings(); s != (Settings{TTL: 5 * time.Minute, Select: Random, Policy: PreferIPv4}) {
		t.Errorf("defaults: %+v", s)
	}
	for _, in := range []string{"-1", "-1s", "soon", "1x", "d"} {
		if _, err := (Config{TTL: &in}).Settings(); err == nil || err.Error() != "invalid DNS TTL: "+in {
			t.Errorf("ttl %q: %v, want invalid DNS TTL: %s", in, err, in)
		}
	}
}

func TestFilter(t *testing.T) {
	both := addrs("::1", "10.0.0.1", "fd00::2", "::ffff:10.0.0.2")
	for p, want := range map[Policy]string{
		PreferIPv4: "10.0.0.1,10.0.0.2", PreferIPv6: "::1,fd00::2",
		OnlyIPv4: "10.0.0.1,10.0.0.2", OnlyIPv6: "::1,fd00::2", Any: "::1,10.0.0.1,fd00::2,::ffff:10.0.0.2",
	} {
		if got := str(Filter(both, p)); got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
	v4 := addrs("10.0.0.1")
	if got := str(Filter(v4, PreferIPv6)); got != "10.0.0.1" {
		t.Errorf("preferIPv6 falls back to IPv4: %s", got)
	}
	if got := Filter(v4, OnlyIPv6); len(got) != 0 {
		t.Errorf("onlyIPv6 of an IPv4-only name: %v, want none", got)
	}
	if got := str(Filter(addrs("::1"), PreferIPv4)); got != "::1" {
		t.Errorf("preferIPv4 falls back to IPv6: %s", got)
	}
}

func TestPick(t *testing.T) {
	a := addrs("10.0.0.1", "10.0.0.2", "10.0.0.3")
	var seen []string
	var rr uint64
	for range 7 {
		var x netip.Addr
		x, rr = Pick(a, RoundRobin, rr, nil)
		seen = append(seen, x.String()[7:])
	}
	if got := strings.Join(seen, ""); got != "1231231" || rr != 7 {
		t.Fatalf("roundRobin: %s (count %d)", got, rr)
	}
	if x, n := Pick(a, First, 5, nil); x != a[0] || n != 5 {
		t.Fatalf("first: %v %d", x, n)
	}
	if x, _ := Pick(a, Random, 0, func(n int) int { return n - 1 }); x != a[2] {
		t.Fatalf("random takes rnd's index: %v", x)
	}
	if x, n := Pick(nil, RoundRobin, 3, nil); x.IsValid() || n != 3 {
		t.Fatalf("none: %v %d", x, n)
	}
	if x, _ := Pick(a, RoundRobin, 1<<8, nil); x != a[256%3] {
		t.Fatalf("the count does not wrap at a byte: %v", x)
	}
}

func TestFresh(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if !Fresh(t0, t0.Add(time.Minute-1), time.Minute) || Fresh(t0, t0.Add(time.Minute), time.Minute) || Fresh(t0, t0, 0) {
		t.Fatal("fresh strictly before looked+ttl; ttl 0 never")
	}
}

// fakeLookup answers from a table and counts the lookups of each name.
type fakeLookup struct {
	answers map[string][]netip.Addr
	calls   map[string]int
}

func (f *fakeLookup) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	f.calls[host]++
	if a, ok := f.answers[host]; ok {
		return a, nil
	}
	return nil, errors.New("lookup " + host + ": no such host (fake)")
}

func TestResolverCachesForTTLAndRoundRobins(t *testing.T) {
	f := &fakeLookup{answers: map[string][]netip.Addr{"a.test": addrs("127.0.0.1", "::1", "127.0.0.2")}, calls: map[string]int{}}
	now := time.Unix(0, 0)
	r := NewResolver(Settings{TTL: time.Minute, Select: RoundRobin, Policy: PreferIPv4}, f.lookup, func() time.Time { return now })
	var got []string
	for range 3 {
		a, err := r.Lookup(context.Background(), "a.test")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.String())
		now = now.Add(20 * time.Second)
	}
	if strings.Join(got, " ") != "127.0.0.1 127.0.0.2 127.0.0.1" || f.calls["a.test"] != 1 {
		t.Fatalf("got %v with %d lookups; want round robin over the IPv4 addresses, one lookup inside the ttl", got, f.calls["a.test"])
	}
	// At 60 s the first lookup's minute is over: looked up again.
	if _, err := r.Lookup(context.Background(), "a.test"); err != nil || f.calls["a.test"] != 2 {
		t.Fatalf("after the ttl: %d lookups (%v), want 2", f.calls["a.test"], err)
	}
	if _, err := r.Lookup(context.Background(), "gone.test"); err == nil || !strings.Contains(err.Error(), "(fake)") {
		t.Fatalf("a failed lookup is the lookup's error: %v", err)
	}
}

func TestResolverTTLZeroAndPolicyError(t *testing.T) {
	f := &fakeLookup{answers: map[string][]netip.Addr{"v4.test": addrs("127.0.0.1")}, calls: map[string]int{}}
	r := NewResolver(Settings{TTL: 0, Select: First, Policy: OnlyIPv6}, f.lookup, nil)
	for range 2 {
		_, err := r.Lookup(context.Background(), "v4.test")
		var na *NoAddressError
		if !errors.As(err, &na) || err.Error() != "lookup v4.test: no such host" {
			t.Fatalf("onlyIPv6 of an IPv4-only name: %v, want k6's lookup v4.test: no such host", err)
		}
	}
	if f.calls["v4.test"] != 2 {
		t.Fatalf("ttl 0 looks up every time: %d lookups", f.calls["v4.test"])
	}
}

func TestSharedOnePerSettings(t *testing.T) {
	sh := NewShared(nil, nil)
	s := Settings{TTL: time.Second, Select: First, Policy: Any}
	// Called twice on purpose: the second call must find the first's resolver.
	first, second := sh.For(s), sh.For(s)
	if first != second || first == sh.For(Settings{Select: First, Policy: Any}) {
		t.Fatal("one resolver per settings, shared by every caller")
	}
}

// Only round robin keeps a count per name: with ttl=0 and first or random,
// a run that reaches many names must not keep one entry per name.
func TestResolverKeepsNoCountUnlessRoundRobin(t *testing.T) {
	f := &fakeLookup{answers: map[string][]netip.Addr{}, calls: map[string]int{}}
	for i := range 50 {
		f.answers["n"+strconv.Itoa(i)+".test"] = addrs("127.0.0.1", "127.0.0.2")
	}
	for _, sel := range []Select{First, Random} {
		r := NewResolver(Settings{TTL: 0, Select: sel, Policy: PreferIPv4}, f.lookup, nil)
		for name := range f.answers {
			if _, err := r.Lookup(context.Background(), name); err != nil {
				t.Fatal(err)
			}
		}
		if len(r.rr) != 0 {
			t.Fatalf("select %s: %d round-robin counts kept", sel, len(r.rr))
		}
	}
}
