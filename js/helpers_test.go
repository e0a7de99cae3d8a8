package js_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/js"
)

// runHelper evaluates a script that imports the embedded helpers and
// exports its result as `options`.
func runHelper(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "main.js")
	if err := os.WriteFile(p, []byte(src+"\nexport default function () {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := jshost.NewBundle(context.Background(), jshost.Config{Filename: p, Helpers: js.FS})
	if err != nil {
		t.Fatal(err)
	}
	return string(b.Options)
}

func TestRampStages(t *testing.T) {
	got := runHelper(t, `import { rampStages, stepStages } from "buzzload/ramps.js";
export const options = { a: rampStages(10, "1m", "5m", "30s"), b: rampStages(5, "10s", "", "10s"), c: stepStages(10, 2, "1m") };`)
	want := `{"a":[{"duration":"1m","target":10},{"duration":"5m","target":10},{"duration":"30s","target":0}],` +
		`"b":[{"duration":"10s","target":5},{"duration":"10s","target":0}],` +
		`"c":[{"duration":"0s","name":"step-0","target":5},{"duration":"1m","name":"step-0","target":5},` +
		`{"duration":"0s","name":"step-1","target":10},{"duration":"1m","name":"step-1","target":10}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRampStagesRejectsBadInput(t *testing.T) {
	for _, src := range []string{
		`import { rampStages } from "buzzload/ramps.js"; rampStages(0, "1s");`,
		`import { stepStages } from "buzzload/ramps.js"; stepStages(10, 0, "1s");`,
	} {
		p := filepath.Join(t.TempDir(), "main.js")
		if err := os.WriteFile(p, []byte(src+"\nexport default function () {}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := jshost.NewBundle(context.Background(), jshost.Config{Filename: p, Helpers: js.FS}); err == nil {
			t.Errorf("%s: accepted", src)
		}
	}
}

func TestOpThresholds(t *testing.T) {
	got := runHelper(t, `import { opThresholds } from "buzzload/thresholds.js";
export const options = opThresholds(["publish"], { p95: 250, failRate: 0.05, abortOnFail: true });`)
	want := `{"buzz_op_duration{op:publish}":["p(95)<250"],"buzz_op_failed{op:publish}":[{"abortOnFail":true,"threshold":"rate<0.05"}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
