package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// dnsScript dials rr.test (or __ENV.HOST) five times, one after the other:
// one k6/http request in setup (VU 0), three in the iteration (no
// keep-alive, so each is a dial) and one WebSocket. WANT_CODE / WANT_ERR
// are what each dial must come to; checks rate==1 makes a miss exit 99,
// and outcomes count==5 a dial that never came to a check.
const dnsScript = `import http from "k6/http";
import { check } from "k6";
import { Counter } from "k6/metrics";
import { WebSocket } from "k6/experimental/websockets";
const outcomes = new Counter("outcomes");
export const options = Object.assign({ iterations: 1, noConnectionReuse: true,
  thresholds: { checks: ["rate==1"], outcomes: ["count==5"] } }, JSON.parse(__ENV.OPTS || "{}"));
const base = "http://" + __ENV.HOST + ":" + __ENV.PORT;
function get(i) {
  const res = http.get(base + "/who?i=" + i);
  console.log("http error_code=" + res.error_code + " error=" + res.error);
  check(res, { "http outcome": (r) => String(r.error_code) === __ENV.WANT_CODE && (r.error || "").includes(__ENV.WANT_ERR) });
  outcomes.add(1);
}
export function setup() { get("setup"); }
export default function () {
  for (let i = 0; i < 3; i++) get(i);
  const ws = new WebSocket("ws://" + __ENV.HOST + ":" + __ENV.PORT + "/ws");
  let err = "";
  ws.onopen = () => ws.close();
  ws.onerror = (e) => { err = String(e.error); };
  ws.onclose = () => {
    console.log("ws error=" + err);
    check(err, { "ws outcome": (e) => __ENV.WANT_ERR === "" ? e === "" : e.includes(__ENV.WANT_ERR) });
    outcomes.add(1);
  };
}
`

// twoAddrServer listens on 127.0.0.1 and 127.0.0.2 at one port and
// records, in order, the kind of each request and the address it was
// dialled on.
type twoAddrServer struct {
	port string
	mu   sync.Mutex
	got  []string
}

func newTwoAddrServer(t *testing.T) *twoAddrServer {
	t.Helper()
	s := &twoAddrServer{}
	var lns []net.Listener
	for try := 0; try < 20 && len(lns) < 2; try++ {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(a.Addr().String())
		b, err := net.Listen("tcp", "127.0.0.2:"+port)
		if err != nil {
			a.Close() // that port is taken on 127.0.0.2: another
			continue
		}
		lns, s.port = []net.Listener{a, b}, port
	}
	if len(lns) < 2 {
		t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		ip, _, _ := net.SplitHostPort(local.String())
		kind := "http"
		if r.URL.Path == "/ws" {
			kind = "ws"
		}
		s.mu.Lock()
		s.got = append(s.got, kind+"@"+ip)
		s.mu.Unlock()
		if kind == "ws" {
			holdWebSocket(w, r)
			return
		}
		fmt.Fprint(w, ip)
	})
	for _, ln := range lns {
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	return s
}

func (s *twoAddrServer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.Join(s.got, " ")
	s.got = nil
	return out
}

// stubLookup is the DNS of these tests, handed to the runner the way main
// hands it Go's resolver: rr.test has two IPv4 addresses, v4.test one.
func stubLookup(_ context.Context, host string) ([]netip.Addr, error) {
	switch host {
	case "rr.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}, nil
	case "v4.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func runWithLookup(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb, Env: env, Lookup: stubLookup})
	return code, errb.String()
}

// k6's dns option through the real runner: one resolver for the run (VU 0
// in setup and VU 1 share its round-robin count, k6/http and WebSockets
// too), select picks the address, policy filters the family, layers merge
// field by field (--dns select=first over the script's roundRobin), and
// onlyIPv6 of an IPv4-only name fails every dial with k6's text (k6/http
// error_code 1000, as k6 gives this error no code of its own).
func TestDNSOptionSelectsAndFilters(t *testing.T) {
	noDNS(t) // whatever the wiring does, nothing is asked of a real resolver
	srv := newTwoAddrServer(t)
	script := filepath.Join(t.TempDir(), "dns.js")
	if err := os.WriteFile(script, []byte(dnsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	rr := `{"dns": {"select": "roundRobin", "ttl": "inf"}}`
	for _, c := range []struct {
		name, host, opts, wantCode, wantErr string
		flags, env                          []string
		want                                string
	}{
		{
			name: "roundRobin spreads the run's dials over both addresses", host: "rr.test", opts: rr, wantCode: "0",
			want: "http@127.0.0.1 http@127.0.0.2 http@127.0.0.1 http@127.0.0.2 ws@127.0.0.1",
		},
		{
			name: "K6_DNS roundRobin with ttl 0", host: "rr.test", wantCode: "0", env: []string{"K6_DNS=ttl=0,select=roundRobin"},
			want: "http@127.0.0.1 http@127.0.0.2 http@127.0.0.1 http@127.0.0.2 ws@127.0.0.1",
		},
		{
			name: "--dns select=first wins over the script's select, keeps its ttl", host: "rr.test", opts: rr, wantCode: "0",
			flags: []string{"--dns", "select=first"},
			want:  "http@127.0.0.1 http@127.0.0.1 http@127.0.0.1 http@127.0.0.1 ws@127.0.0.1",
		},
		{
			name: "--dns select=roundRobin keeps the script's policy=onlyIPv6", host: "rr.test", opts: `{"dns": {"policy": "onlyIPv6"}}`,
			flags: []string{"--dns", "select=roundRobin"}, wantCode: "1000", wantErr: "lookup rr.test: no such host",
		},
		{
			name: "onlyIPv6 of an IPv4-only name", host: "v4.test", opts: rr, env: []string{"K6_DNS=policy=onlyIPv6"},
			wantCode: "1000", wantErr: "lookup v4.test: no such host",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "-q", "--summary-mode=disabled", "--address", "", "-e", "OPTS=" + c.opts, "-e", "HOST=" + c.host,
				"-e", "PORT=" + srv.port, "-e", "WANT_CODE=" + c.wantCode, "-e", "WANT_ERR=" + c.wantErr}, c.flags...)
			code, stderr := runWithLookup(t, c.env, append(args, script)...)
			if code != 0 {
				t.Fatalf("exit %d (99: a check failed)\n%s", code, stderr)
			}
			if got := srv.take(); got != c.want {
				t.Fatalf("dials reached\n  %q\nwant\n  %q\n%s", got, c.want, stderr)
			}
		})
	}
}

// Bad dns values are config errors (exit 104) naming the option and value.
func TestDNSOptionBadValueIsAConfigError(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dns.js")
	if err := os.WriteFile(script, []byte(dnsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args, env []string
		want      []string
	}{
		{args: []string{"--dns", "select=fastest"}, want: []string{"--dns", "fastest does not belong to DNSSelect values"}},
		{args: []string{"--dns", "ttl=1m,colour=red"}, want: []string{"--dns", "unknown DNS configuration field: colour"}},
		{env: []string{"K6_DNS=ttl=-1"}, want: []string{"K6_DNS", "invalid DNS TTL: -1"}},
		{args: []string{"-e", `OPTS={"dns": {"policy": "ipv4"}}`}, want: []string{"dns", "ipv4 does not belong to DNSPolicy values"}},
		{args: []string{"-e", `OPTS={"dns": {"ttl": "soon"}}`}, want: []string{"dns", "invalid DNS TTL: soon"}},
		// A bad layer is an error even where a higher one sets the field.
		{args: []string{"-e", `OPTS={"dns": {"policy": "ipv4"}}`, "--dns", "policy=any"}, want: []string{"dns", "ipv4 does not belong to DNSPolicy values"}},
	} {
		code, stderr := runWithLookup(t, c.env, append(append([]string{"run", "-q", "--address", ""}, c.args...), script)...)
		ok := code == 104
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if !ok {
			t.Errorf("%v %v: exit %d, stderr %q; want 104 naming %q", c.args, c.env, code, stderr, c.want)
		}
	}
}
