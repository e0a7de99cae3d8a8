package report

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/scenario"
)

// The bounds in force come from NIP-11 when the relay advertises them and
// are Buzz's defaults otherwise; a scenario asking for more history than a
// page holds is warned about.
func TestRelayLimitsFromNIP11OrBuzzDefaults(t *testing.T) {
	var doc NIP11Limitation
	doc.Limitation.MaxLimit = 500
	got := RelayLimitsOf(doc)
	by := map[string]RelayLimit{}
	for _, l := range got {
		by[strings.SplitN(l.Name, " (", 2)[0]] = l
	}
	if l := by["events per page"]; l.Value != 500 || l.Source != "NIP-11" {
		t.Fatalf("page limit %+v", l)
	}
	if l := by["filters per REQ"]; l.Value != 10 || l.Source != "Buzz default" {
		t.Fatalf("filters %+v", l)
	}
	sc := &scenario.Scenario{File: "s.toml", Human: scenario.Human{HistoryLimit: 800}}
	w := RelayLimitWarnings(sc, got)
	if len(w) != 1 || !strings.Contains(w[0], "human.history_limit 800 is above the relay's 500 events per page (NIP-11)") {
		t.Fatalf("warnings %q", w)
	}
	if line := limitsLine(got); !strings.Contains(line, "WebSocket frames per 5 s per key 50 (Buzz default)") {
		t.Fatalf("header %q", line)
	}
}
