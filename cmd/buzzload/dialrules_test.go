package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// dialRulesScript makes one k6/http request and opens one WebSocket, and
// checks what came of each: the http error_code, and the WebSocket's
// events in order. checks rate==1 makes a wrong outcome exit 99.
const dialRulesScript = `import http from "k6/http";
import { check } from "k6";
import { WebSocket } from "k6/experimental/websockets";
export const options = Object.assign({ iterations: 1, thresholds: { checks: ["rate==1"] } }, JSON.parse(__ENV.OPTS || "{}"));
export default function () {
  const res = http.get(__ENV.HTTP_URL);
  console.log("http error_code=" + res.error_code + " error=" + res.error);
  check(res, { "http error_code": (r) => String(r.error_code) === __ENV.WANT_HTTP });
  const seen = [];
  const ws = new WebSocket(__ENV.WS_URL);
  ws.onopen = () => { seen.push("open"); ws.close(); };
  ws.onerror = (e) => seen.push("error: " + e.error);
  ws.onclose = (e) => {
    seen.push("close " + e.code);
    console.log("ws events " + JSON.stringify(seen));
    check(seen, { "ws events": (s) => JSON.stringify(s) === __ENV.WANT_WS });
  };
}
`

// noDNS makes every DNS query of this process fail (names in /etc/hosts
// still resolve), so a test whose rules did not apply cannot send one
// off the machine: it fails instead.
func noDNS(t *testing.T) {
	t.Helper()
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	t.Cleanup(func() { net.DefaultResolver = old })
}

// k6 v1.x dials every network module of a VU through the VU's one dialer:
// hosts, blockHostnames and blacklistIPs hold for k6/experimental/websockets
// as for k6/http, with k6's error texts (the WebSocket's error event, then
// close with no code) and codes (http error_code 1110, 1111).
func TestDialRulesApplyToHTTPAndWebSockets(t *testing.T) {
	noDNS(t)
	srv := newSourceServer(t)
	u, _ := url.Parse(srv.srv.URL)
	port := u.Port()
	script := filepath.Join(t.TempDir(), "dial.js")
	if err := os.WriteFile(script, []byte(dialRulesScript), 0o600); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf(`"hosts": {"ws.test": "127.0.0.1:%s", "*.wild.test": "127.0.0.1"}`, port)
	opened := `["open","close 1000"]`
	for _, c := range []struct {
		name, opts       string
		flags, env       []string
		httpURL, wsURL   string
		wantHTTP, wantWS string
		reached          []string // the requests the server must see (and no other)
	}{
		{
			name: "hosts maps a name and a wildcard", opts: "{" + hosts + "}",
			httpURL: "http://ws.test/who?vu=http", wsURL: "ws://a.wild.test:" + port + "/ws?vu=ws",
			wantHTTP: "0", wantWS: opened, reached: []string{"http", "ws"},
		},
		{
			name: "blacklistIPs refuses the mapped address", opts: `{` + hosts + `, "blacklistIPs": ["127.0.0.0/8"]}`,
			httpURL: "http://ws.test/who?vu=http", wsURL: "ws://ws.test/ws?vu=ws",
			wantHTTP: "1110", wantWS: `["error: IP (127.0.0.1) is in a blacklisted range (127.0.0.0/8)","close undefined"]`,
		},
		{
			name: "blacklistIPs refuses an IP literal", opts: `{"blacklistIPs": ["127.0.0.1/32"]}`,
			httpURL: srv.srv.URL + "/who?vu=http", wsURL: "ws://127.0.0.1:" + port + "/ws?vu=ws",
			wantHTTP: "1110", wantWS: `["error: IP (127.0.0.1) is in a blacklisted range (127.0.0.1/32)","close undefined"]`,
		},
		{
			name: "blockHostnames refuses a name before hosts", opts: `{` + hosts + `, "blockHostnames": ["*.test"]}`,
			httpURL: "http://ws.test/who?vu=http", wsURL: "ws://ws.test/ws?vu=ws",
			wantHTTP: "1111", wantWS: `["error: hostname (ws.test) is in a blocked pattern (*.test)","close undefined"]`,
		},
		{
			name: "blockHostnames never matches an IP literal", opts: `{"blockHostnames": ["*"]}`,
			httpURL: "http://a.wild.test/who?vu=http", wsURL: "ws://127.0.0.1:" + port + "/ws?vu=ws",
			wantHTTP: "1111", wantWS: opened, reached: []string{"ws"},
		},
		{
			name: "--blacklist-ip and K6_BLOCK_HOSTNAMES", opts: "{" + hosts + "}",
			flags: []string{"--blacklist-ip", "10.0.0.0/8,127.0.0.0/8"}, env: []string{"K6_BLOCK_HOSTNAMES=other.test,*.wild.test"},
			httpURL: "http://x.wild.test/who?vu=http", wsURL: "ws://ws.test/ws?vu=ws",
			wantHTTP: "1111", wantWS: `["error: IP (127.0.0.1) is in a blacklisted range (127.0.0.0/8)","close undefined"]`,
		},
		{
			// k6 reads K6_BLOCK_HOSTNAMES="" and --blacklist-ip= as not set:
			// the script's rules stay.
			name:  "empty K6_BLOCK_HOSTNAMES and --blacklist-ip= keep the script's",
			opts:  `{` + hosts + `, "blockHostnames": ["x.wild.test"], "blacklistIPs": ["127.0.0.0/8"]}`,
			flags: []string{"--blacklist-ip="}, env: []string{"K6_BLOCK_HOSTNAMES="},
			httpURL: "http://x.wild.test/who?vu=http", wsURL: "ws://ws.test/ws?vu=ws",
			wantHTTP: "1111", wantWS: `["error: IP (127.0.0.1) is in a blacklisted range (127.0.0.0/8)","close undefined"]`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.by = map[string][]string{}
			srv.mu.Unlock()
			args := append([]string{"run", "-q", "--summary-mode=disabled", "-e", "OPTS=" + c.opts, "-e", "HTTP_URL=" + c.httpURL,
				"-e", "WS_URL=" + c.wsURL, "-e", "WANT_HTTP=" + c.wantHTTP, "-e", "WANT_WS=" + c.wantWS}, c.flags...)
			code, _, stderr := runCLIEnv(t, c.env, append(args, script)...)
			if code != 0 {
				t.Fatalf("exit %d (99: a check failed)\n%s", code, stderr)
			}
			var got []string
			for vu := range srv.sources() {
				got = append(got, vu)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(c.reached, ",") {
				t.Fatalf("the server saw requests %v, want %v\n%s", got, c.reached, stderr)
			}
		})
	}
}

// Bad blacklistIPs and blockHostnames are config errors (exit 104) naming
// the option and the value.
func TestDialRulesBadValueIsAConfigError(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dial.js")
	if err := os.WriteFile(script, []byte(dialRulesScript), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		key, value string
	}{
		{[]string{"--blacklist-ip", "127.0.0.1"}, "blacklistIPs", "127.0.0.1"},
		{[]string{"-e", `OPTS={"blockHostnames": ["a.*.test"]}`}, "blockHostnames", "a.*.test"},
	} {
		code, _, stderr := runCLIEnv(t, nil, append(append([]string{"run", "-q"}, c.args...), script)...)
		if code != 104 || !strings.Contains(stderr, c.key) || !strings.Contains(stderr, c.value) {
			t.Fatalf("%v: exit %d, stderr %q; want 104 naming %s and %q", c.args, code, stderr, c.key, c.value)
		}
	}
}
