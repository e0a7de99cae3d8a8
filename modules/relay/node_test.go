package relay

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeCrossCheck drives the relay with nostr-tools (testdata/node/
// relay-check.mjs): NIP-42, publish/subscribe, reason strings, NIP-98 and a
// relay-signed 39006, all checked by a client we did not write. It skips
// without node or node_modules unless BUZZLOAD_REQUIRE_NODE=1.
func TestNodeCrossCheck(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	arg, _ := json.Marshal(map[string]string{"ws_url": u.WS, "http_url": u.HTTP, "relay_pubkey": r.RelayPubKey()})
	steps := runNodeCheck(t, "relay-check.mjs", arg)
	if len(steps) != 9 {
		t.Fatalf("steps %v", steps)
	}
}

// TestNodeBuzzRules has nostr-tools confirm the Buzz rules of issue 25
// (relay-buzz-rules.mjs): 9000's first p, role tag and 40099; HTTP publishes
// on the API quota; WS admission; the 1000 page clamp; canonical hosts.
func TestNodeBuzzRules(t *testing.T) {
	strict := startRelay(t, func(c *Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
		c.HumanAPICallsPerMin = 4
	})
	bulk := startRelay(t, func(c *Config) { c.RateLimit = false })
	ends := func(r *Relay) map[string]string {
		u := r.URLs()
		return map[string]string{"ws_url": u.WS, "http_url": u.HTTP, "relay_pubkey": r.RelayPubKey()}
	}
	arg, _ := json.Marshal(map[string]any{"strict": ends(strict), "bulk": ends(bulk), "operator_secret": strict.OperatorKeys().SecretHex()})
	if steps := runNodeCheck(t, "relay-buzz-rules.mjs", arg); len(steps) != 5 {
		t.Fatalf("steps %v", steps)
	}
}

// TestNodeRoundTwo has nostr-tools confirm issue 41's points 1, 5, 6 and 9
// from the relay's side (relay-round2.mjs): replica routing and the
// consistency field, the group state re-signed by every 9000, the message
// quota spent before validation, the limiter outage's answers.
func TestNodeRoundTwo(t *testing.T) {
	lagged := startRelay(t, func(c *Config) { c.RateLimit = false; c.ReplicaReadMaxAgeMs = 60_000 })
	strict := startRelay(t, func(c *Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
	})
	ends := func(r *Relay) map[string]string {
		u := r.URLs()
		return map[string]string{"ws_url": u.WS, "http_url": u.HTTP, "relay_pubkey": r.RelayPubKey()}
	}
	arg, _ := json.Marshal(map[string]any{"lagged": ends(lagged), "strict": ends(strict), "operator_secret": strict.OperatorKeys().SecretHex()})
	if steps := runNodeCheck(t, "relay-round2.mjs", arg); len(steps) != 4 {
		t.Fatalf("steps %v", steps)
	}
}

// runNodeCheck runs a testdata/node script with arg and returns its steps,
// failing the test on its error. It skips without node or node_modules
// unless BUZZLOAD_REQUIRE_NODE=1.
func runNodeCheck(t *testing.T, script string, arg []byte) []string {
	t.Helper()
	dir, _ := filepath.Abs("../../testdata/node")
	node, err := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "nostr-tools"))
	if err != nil || modErr != nil {
		if os.Getenv("BUZZLOAD_REQUIRE_NODE") == "1" {
			t.Fatalf("node (%v) or testdata/node/node_modules (%v) missing; run make node-deps", err, modErr)
		}
		t.Skip("node or testdata/node/node_modules missing (make node-deps)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{script, string(arg)}
	if nodeMajor(ctx, node) < 22 {
		args = append([]string{"--experimental-websocket"}, args...) // Node 20/21: WebSocket behind a flag
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	var res struct {
		OK    bool     `json:"ok"`
		Error string   `json:"error"`
		Steps []string `json:"steps"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %v; stdout %q stderr %q", script, err, out, stderr)
	}
	if !res.OK {
		t.Fatalf("nostr-tools check %s failed after %v: %s", script, res.Steps, res.Error)
	}
	return res.Steps
}

func nodeMajor(ctx context.Context, node string) int {
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return 0
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}
