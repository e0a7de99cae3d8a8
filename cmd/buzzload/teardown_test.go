package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/seed"
)

func TestTeardownCommandStagesAndReplay(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "tdown", false)
	secret := r.OperatorKeys().SecretHex()
	env := []string{"TEST_OP_KEY=" + secret}
	if code, out, errs := runWith(t, env, "seed", "-q", path); code != 0 {
		t.Fatalf("seed: %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := runWith(t, env, "teardown", path)
	if code != 0 {
		t.Fatalf("teardown: %d\n%s\n%s", code, out, errs)
	}
	mustHave(t, out, "c0.tdown.test", "requested, stage submitted, request "+seed.DeletionRequestID("tdown", "c0.tdown.test"),
		"2 requested (2 submitted), 0 absent, 0 failed")
	mustHave(t, errs, "teardown: teardown 2/2")
	if strings.Contains(out+errs, secret) {
		t.Fatal("the operator key was printed")
	}

	// The replay, as JSON: same request ids, no failure.
	code, out, _ = runWith(t, env, "teardown", "--json", "-q", path)
	if code != 0 {
		t.Fatalf("replay: %d %s", code, out)
	}
	var res seed.TeardownResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		t.Error("replay not ok")
	}
	for _, h := range res.Hosts {
		if h.RequestID != seed.DeletionRequestID("tdown", h.Host) || h.Stage == seed.StageFailed || h.Stage == seed.StageAbsent {
			t.Errorf("replay host %+v", h)
		}
	}

	// A run that was never seeded: every host absent, exit 0.
	never := writeScenario(t, r, "never", false)
	code, out, _ = runWith(t, env, "teardown", never)
	if code != 0 || !strings.Contains(out, "0 requested, 2 absent, 0 failed") {
		t.Fatalf("never seeded: %d %s", code, out)
	}
}

func TestTeardownCommandFailuresExitOne(t *testing.T) {
	r := seedRelay(t)
	path := writeScenario(t, r, "tfail", false)
	other, _ := nostr.GenerateKeys() // not the relay's operator
	code, out, errs := runWith(t, []string{"TEST_OP_KEY=" + other.SecretHex()}, "teardown", "-q", path)
	if code != 1 {
		t.Fatalf("code %d\n%s\n%s", code, out, errs)
	}
	mustHave(t, out, "failed: ", "not a relay operator", "0 requested, 0 absent, 2 failed")
	mustHave(t, errs, "2 of 2 communities failed")
	if strings.Contains(out+errs, other.SecretHex()) {
		t.Fatal("the operator key was printed")
	}

	// No host template: refused before any request.
	noTmpl := writeScenario(t, r, "notmpl", true)
	code, _, errs = runWith(t, nil, "teardown", noTmpl)
	if code != 1 || !strings.Contains(errs, "community_host_template") {
		t.Fatalf("no template: %d %q", code, errs)
	}
}
