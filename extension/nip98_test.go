package extension_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examples/http-nip98.js: k6/http requests signed with buzz.nip98 are
// accepted by the relay (the unsigned twin is refused with 401 / 1401), and
// k6's metrics, checks and thresholds judge them.
func TestHTTPNIP98Example(t *testing.T) {
	toml, err := os.ReadFile(filepath.Join("..", "examples", "custom-lowlevel.toml"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "examples", "http-nip98.js"))
	if err != nil {
		t.Fatal(err)
	}
	r := runInline(t, t.TempDir(), string(src), "custom-lowlevel.toml", string(toml), nil, nil,
		map[string]string{"DURATION": "2s"})
	if r.res.ExitCode != 0 {
		r.dump(t)
		t.Fatalf("exit %d", r.res.ExitCode)
	}
	for _, want := range []string{"✓ signed query is 200", "✓ unsigned query is refused", "{ name:query }", "result: ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// An agent's buzz.nip98 headers carry x-auth-tag (NIP-OA) beside
// Authorization, and the relay accepts the pair; a client object that did
// not come from sc.client is refused.
func TestNIP98AgentHeaders(t *testing.T) {
	const script = `
import http from "k6/http";
import buzz from "k6/x/buzz";
import { check } from "k6";
const sc = buzz.load("./tiny.toml");
export const options = { scenarios: { a: { executor: "shared-iterations", vus: 1, iterations: 2, exec: "agent" } },
  thresholds: { checks: ["rate==1"] } };
export function setup() { sc.setup(); }
export function agent() {
  const c = sc.client("agent", 0);
  const url = c.httpTarget.replace(/\/$/, "") + "/count";
  const body = JSON.stringify([{ kinds: [9] }]);
  const h = buzz.nip98("POST", url, body, c);
  let threw = false;
  try { buzz.nip98("POST", url, body, { global: 0 }); } catch (e) { threw = String(e).includes("sc.client"); }
  const res = http.post(url, body, { headers: Object.assign({ Host: c.host, "Content-Type": "application/json" }, h) });
  check(res, {
    "agent headers": () => h.Authorization.startsWith("Nostr ") && JSON.parse(h["x-auth-tag"])[0] === "auth",
    "agent accepted": (r) => r.status === 200,
    "foreign client refused": () => threw,
  });
}
export function teardown() { sc.teardown(); }
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT }); }
`
	r := runInline(t, t.TempDir(), script, "tiny.toml", tinySmoke, nil, nil, nil)
	if r.res.ExitCode != 0 {
		r.dump(t)
		t.Fatalf("exit %d", r.res.ExitCode)
	}
}
