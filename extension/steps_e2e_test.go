package extension_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/modules/relay"
)

func runInlineWithRelay(t *testing.T, toml string, onRelay func(*relay.Relay)) *run {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	return runInline(t, t.TempDir(), string(src), "local-smoke.toml", toml, nil, onRelay, nil)
}

// A spike of errors confined to a step's ramp that the whole step does not
// cross passes; the runner's exit code agrees with the report.
func TestRampOnlySpikeWithinTheStepPasses(t *testing.T) {
	r := runInline(t, t.TempDir(), stepScript, "step.toml", strings.Replace(stepTOML, "RATE", "0.25", 1), nil, nil, nil)
	pub := r.report.Steps[0].Ops["publish"]
	if pub == nil || pub.Errors == 0 || pub.OK < 3*pub.Errors {
		r.dump(t)
		t.Fatalf("step 0 publish %+v: want a few errors among many successes", pub)
	}
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q: the step's error rate %.3f is under 0.25", r.res.ExitCode, r.report.AbortReason, pub.ErrorRate)
	}
	t.Logf("step 0 publish: %d ok, %d errors", pub.OK, pub.Errors)
}

// The same errors over a step whose limit they cross fail the run with 99,
// and the report names the step.
func TestStepCrossingTheLimitFails(t *testing.T) {
	r := runInline(t, t.TempDir(), stepScript, "step.toml", strings.Replace(stepTOML, "RATE", "0.005", 1), nil, nil, nil)
	if r.res.ExitCode != engine.ExitThresholdsFailed {
		r.dump(t)
		t.Fatalf("exit %d, want 99", r.res.ExitCode)
	}
	if r.report.OK || !strings.HasPrefix(r.report.AbortReason, "step 0: publish error rate") {
		t.Errorf("abort_reason %q should name step 0 and the publish error rate", r.report.AbortReason)
	}
	if !strings.Contains(strings.Join(r.report.ThresholdsFailed, " "), "buzz_op_failed{op:publish}") {
		t.Errorf("thresholds_failed %v lacks the publish error rate", r.report.ThresholdsFailed)
	}
}

// The low-level example backs off after a failed connect, as the built-in
// clients do: with the relay gone mid-run, its two VUs make a few attempts
// a second, not tens of thousands (issue 30 item 9: 57,254 in 30 s). Fails
// without the example's sleep(1) after a failed connect.
func TestCustomLowLevelExampleBacksOffWhenTheRelayGoes(t *testing.T) {
	var gone time.Time
	r := runLowLevelExample(t, func(rl *relay.Relay) {
		time.AfterFunc(1500*time.Millisecond, func() { gone = time.Now(); _ = rl.Close() })
	}, map[string]string{"DURATION": "4s"})
	if gone.IsZero() {
		t.Fatal("the relay was not stopped")
	}
	var attempts int64
	for _, s := range r.report.Steps {
		if o := s.Ops["connect"]; o != nil {
			attempts += o.Errors
		}
	}
	// 2 VUs for at most ~2.5 s after the relay went, one attempt a second
	// each at most (plus the one in flight when it went).
	if attempts == 0 || attempts > 12 {
		r.dump(t)
		t.Errorf("%d failed connects after the relay went: want a few (back off), not a storm", attempts)
	}
}

// runLowLevelExample runs examples/custom-lowlevel.js with its TOML.
func runLowLevelExample(t *testing.T, onRelay func(*relay.Relay), env map[string]string) *run {
	t.Helper()
	return runInline(t, t.TempDir(), mustRead(t, filepath.Join("..", "examples", "custom-lowlevel.js")), "custom-lowlevel.toml",
		mustRead(t, filepath.Join("..", "examples", "custom-lowlevel.toml")), nil, onRelay, env)
}
