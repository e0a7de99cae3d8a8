package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// seedRelay runs an in-process relay on 127.0.0.1 for one CLI test.
func seedRelay(t testing.TB) *relay.Relay { return relaytest.Start(t, nil) }

const cliShape = `
[shape]
communities = 2
channels_per_community = 2
history_messages_per_channel = 3
thread_roots_per_channel = 1
thread_depth = 2
private_channels = true
seed_concurrency = 4
[population]
humans = 4
agents = 2
channels_per_member = 1
[hot_thread]
seed_replies = 3
authors = 1
[[ramp]]
users = 1
hold_secs = 1
`

// writeScenario writes a scenario aimed at r (with a host template unless
// noTemplate) and returns its path.
func writeScenario(t *testing.T, r *relay.Relay, runID string, noTemplate bool) string {
	t.Helper()
	addr := r.Addr()
	target := fmt.Sprintf("[target]\nws_url = \"ws://%s\"\nhttp_url = \"http://%s\"\n", addr, addr)
	if !noTemplate {
		target += fmt.Sprintf("connect_addr = %q\ncommunity_host_template = \"c{n}.{run}.test\"\noperator_key_env = \"TEST_OP_KEY\"\n", addr)
	}
	path := filepath.Join(t.TempDir(), runID+".toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("run_id = %q\n", runID)+target+cliShape), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWith runs a subcommand with env (KEY=VALUE) and returns code, stdout, stderr.
func runWith(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := dispatch(ctx, args, cliEnv{Stdout: &out, Stderr: &errb, Env: env})
	return code, out.String(), errb.String()
}

func TestSeedCommandSeedsAndReruns(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "cli", false)
	secret := r.OperatorKeys().SecretHex()
	env := []string{"TEST_OP_KEY=" + secret}

	code, out, errs := runWith(t, env, "seed", path)
	if code != 0 {
		t.Fatalf("seed: code %d\nstdout %s\nstderr %s", code, out, errs)
	}
	posts := 4*(3+1*3) + 1 + 3
	mustHave(t, out, "communities: 2 (2 created)", "c0.cli.test", "c1.cli.test", "channels:    4 planned: 4 created",
		fmt.Sprintf("posts:       %d planned: %d posted", posts, posts), fmt.Sprintf("ok: the relay accepted all %d planned posts", posts))
	mustHave(t, errs, "seed: communities 2/2", "seed: channels 4/4", fmt.Sprintf("seed: posts %d/%d", posts, posts))
	if strings.Contains(out+errs, secret) {
		t.Fatal("the operator key was printed")
	}

	// The rerun, as JSON: nothing new.
	code, out, errs = runWith(t, env, "seed", "--json", "-q", path)
	if code != 0 || errs != "" {
		t.Fatalf("rerun: code %d stderr %q", code, errs)
	}
	var res seed.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if res.RunID != "cli" || res.Posts.Created != 0 || res.Posts.Existing != posts || res.Members.Created != 0 || res.MemberEvents != 0 ||
		res.Communities[0].Status != "existed" || !res.Success {
		t.Fatalf("rerun result %+v", res)
	}
}

func TestSeedCommandRefusedMemberExitsOne(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "refusal", false)
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_OP_KEY=" + r.OperatorKeys().SecretHex()}
	// The seed mixes the operator key into the identities: so do we.
	if src, err := sc.SetIdentitySecret(envLookup(env)); err != nil || src != "the operator key" {
		t.Fatalf("identity secret: %q %v", src, err)
	}
	pk := sc.Keys(sc.GlobalIndex(scenario.KindAgent, 0)).PubKey()
	r.Faults().RefuseMembers("restricted: not today", pk)
	code, out, errs := runWith(t, env, "seed", "-q", path)
	if code != 1 {
		t.Fatalf("code %d\n%s\n%s", code, out, errs)
	}
	mustHave(t, out, "refused:", "member agent 0", pk, "restricted: not today", "FAILED: 0 of")
	mustHave(t, errs, "the relay refused 1 of", "member agent 0")
}

func TestSeedCommandUsageAndInputErrors(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "usage", false)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no file", nil, []string{"seed"}, 2, "want exactly one scenario file"},
		{"two files", nil, []string{"seed", path, path}, 2, "want exactly one scenario file"},
		{"bad flag", nil, []string{"seed", "--frob", path}, 2, "unknown flag: --frob"},
		// Invalid configuration is 104, as run says it (issue 47 item 3).
		{"missing file", nil, []string{"seed", filepath.Join(t.TempDir(), "nope.toml")}, 104, "nope.toml"},
		{"no operator key", nil, []string{"seed", path}, 104, "TEST_OP_KEY"},
		{"bad operator key", []string{"TEST_OP_KEY=zz"}, []string{"seed", path}, 104, "TEST_OP_KEY"},
		{"teardown no file", nil, []string{"teardown"}, 2, "want exactly one scenario file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runWith(t, tc.env, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, errs, tc.code, tc.want)
			}
		})
	}
	code, out, _ := runWith(t, nil, "seed", "--help")
	if code != 0 || !strings.Contains(out, "usage: buzzload seed") || !strings.Contains(out, "--json") {
		t.Fatalf("help: %d %q", code, out)
	}
}

// The embedded relay is seeded inside `buzzload run`: seed says so.
func TestSeedCommandRefusesEmbedded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "embedded.toml")
	if err := os.WriteFile(path, []byte("run_id = \"emb\"\n[[ramp]]\nusers = 1\nhold_secs = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"seed", "teardown"} {
		code, out, errs := runWith(t, nil, cmd, path)
		if code != 2 || out != "" {
			t.Fatalf("%s: code %d stdout %q", cmd, code, out)
		}
		mustHave(t, errs, "embedded relay", "buzzload run", "target.ws_url")
	}
}

func mustHave(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, x := range subs {
		if !strings.Contains(s, x) {
			t.Errorf("output lacks %q:\n%s", x, s)
		}
	}
}

// Issue 10: against a relay that answers 429 forever, buzzload seed ends
// after --throttle-timeout with exit 1 and a message that says it was
// throttled (it used to retry for hours).
func TestSeedCommandThrottledForeverExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"rate-limited: quota exceeded; retry in 1s"}`)
	}))
	defer srv.Close()
	target := fmt.Sprintf("[target]\nws_url = %q\nhttp_url = %q\n", "ws"+strings.TrimPrefix(srv.URL, "http"), srv.URL)
	path := filepath.Join(t.TempDir(), "throttled.toml")
	shape := strings.Replace(cliShape, "private_channels = true\n", "", 1)
	if err := os.WriteFile(path, []byte("run_id = \"throttled\"\n"+target+shape), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, _, stderr := runWith(t, nil, "seed", "-q", "--throttle-timeout", "2s", path)
	if code != 1 || !strings.Contains(stderr, "throttled") || !strings.Contains(stderr, "429") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("took %v", d)
	}
	code, _, stderr = runWith(t, nil, "seed", "-q", "--throttle-timeout", "0", "--deadline", "1500ms", path)
	if code != 1 || !strings.Contains(stderr, "deadline") || !strings.Contains(stderr, "the seed was throttled") {
		t.Fatalf("deadline: exit %d, stderr %q", code, stderr)
	}
}

// A relay that does not answer: seed and teardown stop before sending
// anything with exit 111, as run's preflight does (issue 26 item 7). Fails
// without reachable(): seed tried every post and exited 1.
func TestSeedAndTeardownOfADeadRelayExit111(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "deadrelay", false)
	key := "TEST_OP_KEY=" + r.OperatorKeys().SecretHex()
	r.Close() // nothing listens at its address any more
	for _, cmd := range []string{"seed", "teardown"} {
		code, _, errs := runWith(t, []string{key}, cmd, "-q", path)
		if code != ExitUnreachable || !strings.Contains(errs, "does not answer NIP-11") || !strings.Contains(errs, "stopped before sending anything") {
			t.Errorf("%s: exit %d, stderr %q", cmd, code, errs)
		}
	}
}
