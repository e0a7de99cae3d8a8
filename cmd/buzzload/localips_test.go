package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

// sourceServer answers /who?vu=N (and a WebSocket at /ws?vu=N) on
// 127.0.0.1 and remembers the source address each VU's requests came from.
type sourceServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	by  map[string][]string // vu -> source IPs, one per request
}

func newSourceServer(t *testing.T) *sourceServer {
	t.Helper()
	s := &sourceServer{by: map[string][]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.mu.Lock()
		s.by[r.URL.Query().Get("vu")] = append(s.by[r.URL.Query().Get("vu")], ip)
		s.mu.Unlock()
		if r.URL.Path == "/ws" {
			holdWebSocket(w, r)
			return
		}
		fmt.Fprint(w, ip)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// sources is vu -> its one source IP, or the list when a VU used several.
func (s *sourceServer) sources() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for vu, ips := range s.by {
		seen := map[string]bool{}
		var u []string
		for _, ip := range ips {
			if !seen[ip] {
				seen[ip] = true
				u = append(u, ip)
			}
		}
		out[vu] = strings.Join(u, "+")
	}
	return out
}

const localIPsScript = `import http from "k6/http";
export const options = {
  localIPs: __ENV.SCRIPT_IPS,
  scenarios: { s: { executor: "per-vu-iterations", vus: Number(__ENV.VUS || 1), iterations: 2 } },
};
export function setup() { http.get(__ENV.BASE + "/who?vu=0"); }
export default function () { http.get(__ENV.BASE + "/who?vu=" + __VU); }
`

func writeLocalIPsScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "localips.js")
	if err := os.WriteFile(p, []byte(localIPsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// k6 v1.x binds each VU's dialer to one address of localIPs: VU n to the
// n-th (round robin), setup's VU 0 to the first. The server sees it.
func TestLocalIPsBindEachVUToItsAddress(t *testing.T) {
	srv := newSourceServer(t)
	script := writeLocalIPsScript(t)
	code, _, stderr := runCLIEnv(t, nil, "run", "-q", "--summary-mode=disabled",
		"-e", "BASE="+srv.srv.URL, "-e", "SCRIPT_IPS=127.0.0.2-127.0.0.4", "-e", "VUS=4", script)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	want := map[string]string{"0": "127.0.0.2", "1": "127.0.0.2", "2": "127.0.0.3", "3": "127.0.0.4", "4": "127.0.0.2"}
	if got := srv.sources(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("source address by VU %v, want %v", got, want)
	}
}

// k6 dials a VU's WebSockets (k6/experimental/websockets) from its
// localIPs address too.
func TestLocalIPsBindWebSockets(t *testing.T) {
	srv := newSourceServer(t)
	script := filepath.Join(t.TempDir(), "ws.js")
	src := `import { WebSocket } from "k6/experimental/websockets";
export const options = { localIPs: "127.0.0.2-127.0.0.3", scenarios: { s: { executor: "per-vu-iterations", vus: 2, iterations: 1 } } };
export default function () {
  const ws = new WebSocket(__ENV.BASE.replace("http://", "ws://") + "/ws?vu=" + __VU);
  ws.onopen = () => ws.close();
}
`
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLIEnv(t, nil, "run", "-q", "--summary-mode=disabled", "-e", "BASE="+srv.srv.URL, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	want := map[string]string{"1": "127.0.0.2", "2": "127.0.0.3"}
	if got := srv.sources(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("WebSocket source address by VU %v, want %v", got, want)
	}
}

// localIPs comes from the config file < script options < K6_LOCAL_IPS <
// --local-ips, and an empty value is "not set" (the lower layer's stays).
func TestLocalIPsLayers(t *testing.T) {
	script := writeLocalIPsScript(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"localIPs": "127.0.0.5"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		scriptIP string
		env      []string
		flags    []string
		want     string
	}{
		{"config file", "", nil, nil, "127.0.0.5"},
		{"script over config", "127.0.0.6", nil, nil, "127.0.0.6"},
		{"empty script value keeps config", `""`, nil, nil, "127.0.0.5"},
		{"env over script", "127.0.0.6", []string{"K6_LOCAL_IPS=127.0.0.7"}, nil, "127.0.0.7"},
		{"flag over env", "127.0.0.6", []string{"K6_LOCAL_IPS=127.0.0.7"}, []string{"--local-ips", "127.0.0.8"}, "127.0.0.8"},
		{"empty flag keeps env", "127.0.0.6", []string{"K6_LOCAL_IPS=127.0.0.7"}, []string{"--local-ips="}, "127.0.0.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newSourceServer(t)
			args := []string{"run", "-q", "--summary-mode=disabled", "-c", cfg, "-e", "BASE=" + srv.srv.URL}
			if c.scriptIP == `""` {
				args = append(args, "-e", "SCRIPT_IPS=")
			} else if c.scriptIP != "" {
				args = append(args, "-e", "SCRIPT_IPS="+c.scriptIP)
			}
			code, _, stderr := runCLIEnv(t, c.env, append(append(args, c.flags...), script)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if got := srv.sources(); got["1"] != c.want || got["0"] != c.want {
				t.Fatalf("sources %v, want every request from %s", got, c.want)
			}
		})
	}
}

// An address the machine does not have (TEST-NET-1, RFC 5737) makes every
// request fail at its dial, recorded as a failed request, and the run goes
// on: no panic, the iteration is not aborted.
func TestLocalIPsUnusableAddressFailsRequests(t *testing.T) {
	srv := newSourceServer(t)
	script := filepath.Join(t.TempDir(), "bad.js")
	src := `import http from "k6/http";
export const options = { iterations: 2, thresholds: { http_req_failed: ["rate==1"], http_reqs: ["count==2"] } };
export default function () {
  const res = http.get(__ENV.BASE + "/who?vu=" + __VU);
  console.log("status=" + res.status + " error_code=" + res.error_code + " error=" + res.error);
}
`
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLIEnv(t, nil, "run", "-q", "--summary-mode=disabled", "--local-ips", "192.0.2.1", "-e", "BASE="+srv.srv.URL, script)
	if code != 0 || !strings.Contains(stderr, "status=0") || !strings.Contains(stderr, "assign requested address") {
		t.Fatalf("exit %d (want 0: every request failed and was counted)\n%s", code, stderr)
	}
	if got := srv.sources(); len(got) != 0 {
		t.Fatalf("the server saw %v; want no request to arrive", got)
	}
}

// A bad localIPs is a config error (exit 104) naming the option and value,
// from any layer.
func TestLocalIPsBadValueIsAConfigError(t *testing.T) {
	script := writeLocalIPsScript(t)
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		value string
	}{
		{"flag", nil, []string{"--local-ips", "127.0.0.x"}, "127.0.0.x"},
		{"env", []string{"K6_LOCAL_IPS=10.0.0.5-10.0.0.1"}, nil, "10.0.0.5-10.0.0.1"},
		{"script", nil, []string{"-e", "SCRIPT_IPS=10.0.0.0/33"}, "10.0.0.0/33"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"run", "-q", "-e", "BASE=http://127.0.0.1:1"}, c.args...), script)
			code, _, stderr := runCLIEnv(t, c.env, args...)
			if code != 104 || !strings.Contains(stderr, "localIPs") || !strings.Contains(stderr, c.value) {
				t.Fatalf("exit %d, stderr %q; want 104 naming localIPs and %q", code, stderr, c.value)
			}
		})
	}
}

// holdWebSocket upgrades r and reads (and drops) its messages until the
// client goes: the WebSocket end of the dial tests' loopback servers.
func holdWebSocket(w http.ResponseWriter, r *http.Request) {
	c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}
