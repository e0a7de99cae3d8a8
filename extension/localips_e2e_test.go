package extension_test

import (
	"strings"
	"testing"
)

// target.local_ips reaches every client's dial: loopback addresses other
// than the relay's own connect and run, and an address the machine does not
// have (TEST-NET-1, RFC 5737) fails every client's connect, while the seed,
// which is not a client, still works.
func TestLocalIPsAreTheClientsSourceAddresses(t *testing.T) {
	with := func(ips string) string {
		return strings.Replace(tinySmoke, "connect_timeout_secs = 5\n", "connect_timeout_secs = 5\nlocal_ips = \""+ips+"\"\n", 1)
	}
	ok := runScenario(t, "local-smoke.js", "local-smoke.toml", with("127.0.0.2-127.0.0.4"), nil, nil)
	connects, errs := int64(0), int64(0)
	for _, s := range ok.report.Steps {
		if c := s.Ops["connect"]; c != nil {
			connects += c.OK
			errs += c.Errors
		}
	}
	if connects == 0 || errs != 0 || !ok.report.OK {
		ok.dump(t)
		t.Fatalf("from 127.0.0.2-4: %d connects, %d failed, report ok=%v; want all to connect", connects, errs, ok.report.OK)
	}

	bad := runScenario(t, "local-smoke.js", "local-smoke.toml", with("192.0.2.1"), nil, nil)
	connects, errs = 0, 0
	var texts []string
	for _, s := range bad.report.Steps {
		c := s.Ops["connect"]
		if c == nil {
			continue
		}
		connects += c.OK
		errs += c.Errors
		for _, e := range c.ErrorTexts {
			texts = append(texts, e.Text)
		}
	}
	if connects != 0 || errs == 0 || !strings.Contains(strings.Join(texts, "\n"), "assign requested address") {
		bad.dump(t)
		t.Fatalf("from 192.0.2.1: %d connects, %d failed (%q); want every connect to fail to bind", connects, errs, texts)
	}
}
