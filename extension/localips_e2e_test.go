package extension_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
)

// connects sums the connect op over the report's steps: ok, errors and
// the error texts.
func connects(r *run) (ok, errs int64, texts []string) {
	for _, s := range r.report.Steps {
		c := s.Ops["connect"]
		if c == nil {
			continue
		}
		ok += c.OK
		errs += c.Errors
		for _, e := range c.ErrorTexts {
			texts = append(texts, e.Text)
		}
	}
	return ok, errs, texts
}

// runLocalIPs runs local-smoke.js on tinySmoke with target.local_ips set
// to scenarioIPs ("" = unset) and k6's localIPs option set on the flag
// layer to k6IPs ("" = unset), as --local-ips sets it.
func runLocalIPs(t *testing.T, scenarioIPs, k6IPs string) *run {
	t.Helper()
	toml := tinySmoke
	if scenarioIPs != "" {
		toml = strings.Replace(toml, "connect_timeout_secs = 5\n", "connect_timeout_secs = 5\nlocal_ips = \""+scenarioIPs+"\"\n", 1)
	}
	var cli engine.Layer
	if k6IPs != "" {
		v, _ := json.Marshal(k6IPs)
		cli.Options.HTTP = map[string]json.RawMessage{"localIPs": v}
	}
	src, err := os.ReadFile(filepath.Join("..", "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	return runInlineFlags(t, t.TempDir(), string(src), "local-smoke.toml", toml, nil, nil, nil, cli)
}

// target.local_ips reaches every client's dial: loopback addresses other
// than the relay's own connect and run, and it wins over k6's localIPs
// option (here an address no client could bind). An address the machine
// does not have (TEST-NET-1, RFC 5737) fails every client's connect, while
// the seed, which is not a client, still works.
func TestLocalIPsAreTheClientsSourceAddresses(t *testing.T) {
	good := runLocalIPs(t, "127.0.0.2-127.0.0.4", "192.0.2.1")
	if ok, errs, _ := connects(good); ok == 0 || errs != 0 || !good.report.OK {
		good.dump(t)
		t.Fatalf("from 127.0.0.2-4 (k6's localIPs 192.0.2.1 under it): %d connects, %d failed, report ok=%v; want all to connect", ok, errs, good.report.OK)
	}

	bad := runLocalIPs(t, "192.0.2.1", "")
	if ok, errs, texts := connects(bad); ok != 0 || errs == 0 || !strings.Contains(strings.Join(texts, "\n"), "assign requested address") {
		bad.dump(t)
		t.Fatalf("from 192.0.2.1: %d connects, %d failed (%q); want every connect to fail to bind", ok, errs, texts)
	}
}

// Without target.local_ips, k6's localIPs option (--local-ips,
// K6_LOCAL_IPS, options.localIPs) is the clients' source addresses: one
// the machine does not have fails every client's connect.
func TestK6LocalIPsOptionReachesTheClients(t *testing.T) {
	bad := runLocalIPs(t, "", "192.0.2.1")
	if ok, errs, texts := connects(bad); ok != 0 || errs == 0 || !strings.Contains(strings.Join(texts, "\n"), "assign requested address") {
		bad.dump(t)
		t.Fatalf("k6's localIPs 192.0.2.1: %d connects, %d failed (%q); want every connect to fail to bind", ok, errs, texts)
	}
}
