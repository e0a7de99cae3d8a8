package extension

import (
	"errors"
	"fmt"
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
