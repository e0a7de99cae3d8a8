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

// An advertised page above Buzz's clamp is not trusted (some Buzz
// versions advertise 10000 and return 1000; issue 41 item 8): the bound in
// force is 1000, said so, and a history_limit of 5000 is warned about.
func TestAnAdvertisedPageAboveTheClampIsNotTrusted(t *testing.T) {
	var doc NIP11Limitation
	doc.Limitation.MaxLimit = 10000
	got := RelayLimitsOf(doc)
	if got[0].Value != 1000 || !strings.Contains(got[0].Source, "NIP-11 advertises 10000; Buzz clamps a page at 1000") {
		t.Fatalf("page %+v", got[0])
	}
	w := RelayLimitWarnings(&scenario.Scenario{File: "s.toml", Human: scenario.Human{HistoryLimit: 5000}}, got)
	if len(w) != 1 || !strings.Contains(w[0], "history reads return at most 1000") {
		t.Fatalf("warnings %q", w)
	}
}
