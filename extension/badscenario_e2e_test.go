package extension_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/js"
)

// A broken scenario file stops the run in init code with the file, key and
// line in the message.
func TestBadScenarioFileNamesFileAndKey(t *testing.T) {
	bad := "run_id = \"bad\"\n[population]\nhumans = \"many\"\ntierz = 1\n[[ramp]]\nusers = 1\nhold_secs = 1\n"
	res, msg := runBadScenario(t, "bad.toml", bad)
	// Invalid configuration (issue 26 item 7): 104, one problem a line, no
	// escaped newline, no JS stack.
	if res.ExitCode != engine.ExitInvalidConfig {
		t.Fatalf("exit %d, want 104\n%s", res.ExitCode, msg)
	}
	for _, want := range []string{"\n  ./bad.toml: unknown key population.tierz (did you mean tiers?)\n", "\n  ./bad.toml:3: population.humans: is a string"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error output lacks %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{`\n`, "at jsLoad", "GoError"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error output has %q:\n%s", bad, msg)
		}
	}
}

// runBadScenario runs a script that loads a scenario file of body (named
// name) and returns the result and stderr.
func runBadScenario(t *testing.T, name, body string) (engine.Result, string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.js")
	src := "import buzz from \"k6/x/buzz\";\nconst sc = buzz.load(\"./" + name + "\");\nexport const options = sc.options();\nexport function human() { sc.human(); }\n"
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := jshost.NewRegistry()
	mod := extension.New(extension.Options{})
	if err := reg.Register(extension.ImportPath, mod); err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	var out, errb bytes.Buffer
	res := engine.Run(context.Background(), engine.RunConfig{Script: script, Registry: reg, Helpers: js.FS, Quiet: true,
		SummaryMode: "compact", Stdout: &out, Stderr: &errb})
	if mod.EmbeddedRelay() != nil {
		t.Error("a relay was started for a scenario that does not parse")
	}
	return res, errb.String()
}

// One problem in a scenario file a script loads: one line naming the file,
// the key and the key meant, exit 104, no JS stack (issue 47 item 3).
func TestOneBadKeyIsOneLine(t *testing.T) {
	res, msg := runBadScenario(t, "typo.toml", "run_id = \"typo\"\n[population]\nhumanz = 3\n[[ramp]]\nusers = 1\nhold_secs = 1\n")
	if res.ExitCode != engine.ExitInvalidConfig {
		t.Fatalf("exit %d, want 104\n%s", res.ExitCode, msg)
	}
	if !strings.Contains(msg, "./typo.toml: unknown key population.humanz (did you mean humans?)") {
		t.Errorf("no line naming the key and the key meant:\n%s", msg)
	}
	for _, bad := range []string{`\n`, "at jsLoad", "GoError", "file://"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error output has %q:\n%s", bad, msg)
		}
	}
}
