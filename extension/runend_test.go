package extension

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/modules/scenario"
)

// A configuration problem thrown from the script (a missing operator key in
// setup) ends the run as one line, without the JS stack wrapped around it
// (issue 47 item 3: the report's run check and result line carried
// "GoError: … \n\tat setup (file:///…)").
func TestRunEndOfAConfigurationProblemIsOneLine(t *testing.T) {
	ce := configerr.New(fmt.Errorf("seed ./my.toml: %w", scenario.ErrNoOperatorKey))
	thrown := fmt.Errorf("GoError: %w\n\tat setup (file:///tmp/my.toml.js:5:42(3))", ce)
	got := runEndReason(104, thrown)
	if want := "invalid configuration: seed ./my.toml: no operator key (exit 104)"; got != want {
		t.Errorf("run end %q, want %q", got, want)
	}
	if other := runEndReason(107, errors.New("GoError: boom\n\tat default (file:///x.js:1:1)")); !strings.Contains(other, "\tat default") {
		t.Errorf("a script exception lost its stack: %q", other)
	}
}

// The Buzz report's JSON (--report, sc.report's json) replaces the previous
// file through a rename, never overwriting it in place (issue 43 L1).
func TestReportJSONReplacesThePrevious(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "buzz-report.json")
	if err := os.WriteFile(path, []byte(`{"previous":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.json")
	if err := os.Link(path, old); err != nil {
		t.Fatal(err)
	}
	m := New(Options{})
	if err := m.writeReport(path, []byte(`{"new":true}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != `{"previous":true}` {
		t.Errorf("the previous report was overwritten in place: %s", b)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"new":true}` {
		t.Errorf("report %s", b)
	}
}
