package extension_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
)

// modeScript is the call scenarios/local-desktop.js makes, printing the mode
// the loaded scenario ended up with.
const modeScript = `import buzz from "k6/x/buzz";
const sc = buzz.load('./local-desktop.toml', { desktopMode: __ENV.DESKTOP_MODE });
export const options = { iterations: 1 };
export default function () { console.log("mode=" + sc.desktopMode + "."); }
`

// loadMode runs modeScript in init and one iteration (nothing connects)
// against a TOML whose [desktop].mode is fileMode; env is the script's
// environment.
func loadMode(t *testing.T, fileMode string, env map[string]string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	toml := strings.Replace(tinySmoke, "[[ramp]]", "[desktop]\nfraction = 0.5\nmode = \""+fileMode+"\"\n\n[[ramp]]", 1)
	writeFiles(t, dir, map[string]string{"local-desktop.toml": toml, "script.js": modeScript})
	r := runWithModule(t, extension.Options{}, engine.RunConfig{Script: filepath.Join(dir, "script.js"), ScriptEnv: env})
	if r.mod.EmbeddedRelay() != nil {
		t.Error("loading started the embedded relay")
	}
	return r.res.ExitCode, r.stderr
}

func TestLoadDesktopModeOverridesTheFile(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"legacy over current", "current", map[string]string{"DESKTOP_MODE": "legacy"}, "legacy"},
		{"current over legacy", "legacy", map[string]string{"DESKTOP_MODE": "current"}, "current"},
		{"unset keeps the file", "legacy", nil, "legacy"},
		{"empty keeps the file", "legacy", map[string]string{"DESKTOP_MODE": ""}, "legacy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := loadMode(t, c.file, c.env)
			if code != 0 || !strings.Contains(stderr, "mode="+c.want+".") {
				t.Fatalf("exit %d, want mode %s:\n%s", code, c.want, stderr)
			}
		})
	}
}

func TestLoadDesktopModeRefusesOtherValues(t *testing.T) {
	for _, bad := range []string{"Legacy", "old", " current"} {
		code, stderr := loadMode(t, "current", map[string]string{"DESKTOP_MODE": bad})
		if code != engine.ExitScriptException {
			t.Fatalf("%q: exit %d, want 107\n%s", bad, code, stderr)
		}
		// The log escapes quotes: look for the words.
		for _, want := range []string{"option desktopMode", "want", "legacy", "or", "current", "local-desktop.toml"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%q: the error lacks %q:\n%s", bad, want, stderr)
			}
		}
	}
}
