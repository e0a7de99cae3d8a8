package extension

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

// By default a run shorter than report.PrintWindowsFrom prints no window block
// (its step tables say the same) but records its windows; a longer one
// prints them; --report-interval prints them whatever the length (issue 26
// item 8).
func TestWindowBlocksArePrintedForLongRunsByDefault(t *testing.T) {
	for _, c := range []struct {
		hold  float64
		iv    time.Duration
		print bool
	}{{30, 0, false}, {200, 0, true}, {30, time.Second, true}, {200, -1, false}} {
		sc := &scenario.Scenario{Ramp: []scenario.Step{{Users: 1, HoldSecs: c.hold}}}
		l := &loaded{m: &Module{opts: Options{ReportInterval: c.iv}}, base: sc}
		if _, print := l.reportInterval(); print != c.print {
			t.Errorf("hold %vs, interval %v: print %v, want %v", c.hold, c.iv, print, c.print)
		}
	}
}
