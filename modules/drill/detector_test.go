package drill

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// Three clients closed with 1012 within the gap: one disruption; each back
// when connected and holding as many live subscriptions as before.
func TestClosesWithinTheGapAreOneDisruption(t *testing.T) {
	d := New()
	for i, who := range []string{"a", "b", "c"} {
		d.ConnUp(who, "h", at(0))
		d.SubsLive(who, "h", 2, at(1))
		d.ConnEnded(relayclient.ConnEnd{Self: who, Host: "h", At: at(1000 + i*100), Code: 1012, Reason: "relay restarting", LiveSubs: 2})
	}
	d.Failed(at(1500))
	// a: back and resubscribed; b: back, one subscription short; c: never.
	d.ConnUp("a", "h", at(2000))
	d.SubsLive("a", "h", 1, at(2100))
	d.SubsLive("a", "h", 2, at(2200))
	d.ConnUp("b", "h", at(2500))
	d.SubsLive("b", "h", 1, at(2600))
	d.ConnEnded(relayclient.ConnEnd{Self: "x", Host: "h", At: at(30_000), Code: 1000, ByUs: true}) // a client's own close: nothing
	rs := d.Reports(t0, 30*time.Second)
	if len(rs) != 1 {
		t.Fatalf("%d disruptions", len(rs))
	}
	r := rs[0]
	if r.Closes["1012"] != 3 || r.Failures != 1 || r.Affected != 3 || r.Reconnected != 2 || r.Resubscribed != 1 || r.Reasons["relay restarting"] != 3 {
		t.Fatalf("report %+v", r)
	}
	if r.ReconnectMs.Max != 1400 || r.ResubMs.Max != 1200 || r.AtMs != 1000 || r.EndMs != 1500 {
		t.Fatalf("times %+v", r)
	}
	if r.HerdPeak != 2 { // a and b in the same second after the first close
		t.Fatalf("herd %d", r.HerdPeak)
	}
}

// Closes more than the gap apart are two disruptions; after Close nothing
// counts.
func TestDisruptionsApartAreTwo(t *testing.T) {
	d := New()
	d.ConnEnded(relayclient.ConnEnd{Self: "a", At: at(0), Code: 1006})
	d.ConnEnded(relayclient.ConnEnd{Self: "b", At: at(int(Gap/time.Millisecond) + 1), Code: 1012})
	d.Close()
	d.ConnEnded(relayclient.ConnEnd{Self: "c", At: at(21_000), Code: 1012})
	if rs := d.Reports(t0, 0); len(rs) != 2 || rs[0].Closes["1006"] != 1 || rs[1].Closes["1012"] != 1 {
		t.Fatalf("reports %+v", rs)
	}
}

// A declared drill takes the disruption it caused; one that caused none
// is an entry of its own, in time order.
func TestMatchPutsDrillsOnTheirDisruptions(t *testing.T) {
	d := New()
	d.ConnEnded(relayclient.ConnEnd{Self: "a", At: at(5_100), Code: 1012})
	d.ConnEnded(relayclient.ConnEnd{Self: "b", At: at(60_000), Code: 1006})
	done := []Performed{
		{Drill: scenario.Drill{Kind: "restart", DurationSecs: 1}, At: at(5_000), Closed: 1},
		{Drill: scenario.Drill{Kind: "stall", DurationSecs: 2}, At: at(30_000)},
	}
	rs := Match(d.Reports(t0, 0), done, t0)
	if len(rs) != 3 || !rs[0].Declared || rs[0].Kind != "restart" || rs[0].RelayClosed != 1 ||
		!rs[1].Declared || rs[1].Kind != "stall" || rs[1].Note == "" || rs[2].Declared || rs[2].Kind != "detected" {
		t.Fatalf("matched %+v", rs)
	}
}

func TestRunCommandReportsItsExitAndOutput(t *testing.T) {
	c := RunCommand(t.Context(), []string{"sh", "-c", "echo restarting; exit 3"}, 10*time.Second)
	if c.ExitCode != 3 || c.Output != "restarting\n" || c.Error != "" {
		t.Fatalf("command %+v", c)
	}
	if c := RunCommand(t.Context(), []string{"/nonexistent/kubectl"}, time.Second); c.ExitCode != -1 || c.Error == "" {
		t.Fatalf("missing program %+v", c)
	}
	if c := RunCommand(t.Context(), []string{"sleep", "5"}, 100*time.Millisecond); c.Error == "" {
		t.Fatalf("timeout %+v", c)
	}
}

// A drill performed earlier whose window still holds a later disruption
// does not take it from the drill that caused it (TestEveryDrillKindIsReported
// found the stall claiming the restart's closes).
func TestMatchGivesADisruptionToTheLatestDrill(t *testing.T) {
	d := New()
	d.ConnEnded(relayclient.ConnEnd{Self: "a", At: at(10_005), Code: 1012})
	done := []Performed{
		{Drill: scenario.Drill{Kind: "stall", DurationSecs: 1.5}, At: at(1_000)},
		{Drill: scenario.Drill{Kind: "restart", DurationSecs: 0.5}, At: at(10_000), Closed: 1},
	}
	rs := Match(d.Reports(t0, 0), done, t0)
	if len(rs) != 2 || rs[0].Kind != "stall" || rs[0].Closes["1012"] != 0 || rs[1].Kind != "restart" || rs[1].Closes["1012"] != 1 {
		t.Fatalf("matched %+v", rs)
	}
}
