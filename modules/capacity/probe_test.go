package capacity

import (
	"os"
	"testing"

	"github.com/buzzload/buzzload/modules/scenario"
)

func TestScaleKeepsProportionsAndEveryKind(t *testing.T) {
	for _, c := range []struct {
		h, a, users, wantH, wantA int
	}{
		{90, 10, 100, 90, 10}, {90, 10, 10, 9, 1}, {90, 10, 3, 2, 1}, {90, 10, 1, 1, 1},
		{5, 0, 7, 7, 0}, {0, 4, 3, 0, 3}, {3, 1, 1000, 750, 250},
	} {
		got := Scale(scenario.Population{Humans: c.h, Agents: c.a}, c.users)
		if got.Humans != c.wantH || got.Agents != c.wantA {
			t.Errorf("%d+%d at %d: %+v, want %d+%d", c.h, c.a, c.users, got, c.wantH, c.wantA)
		}
	}
}

// A probe's file parses as a scenario of the probe's people, one step
// judged after its warm-up, aimed at the search's relay, every other key
// as written.
func TestProbeTOMLIsTheScenarioAtAProbe(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/local-capacity.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("local-capacity.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ProbeTOML(src, sc.Population, 40, Phases{RampSecs: 3, SettleSecs: 4, ProbeSecs: 10},
		&Target{WSURL: "ws://127.0.0.1:1", HTTPURL: "http://127.0.0.1:1", ConnectAddr: "127.0.0.1:1", HostTemplate: "c{n}.{run}.test", OperatorKeyEnv: "K"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.Parse("probe.toml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := Scale(sc.Population, 40)
	if p.Population.Humans != want.Humans || p.Population.Agents != want.Agents || len(p.Ramp) != 1 ||
		p.Ramp[0].RampSecs != 3 || p.Ramp[0].HoldSecs != 14 || p.Abort.WarmupSecs != 7 || len(p.Drills) != 0 {
		t.Fatalf("probe scenario %+v %+v %+v", p.Population, p.Ramp, p.Abort)
	}
	if p.Target.WSURL != "ws://127.0.0.1:1" || p.Target.OperatorKeyEnv != "K" || p.Human != sc.Human || p.Shape != sc.Shape || p.RunID != sc.RunID {
		t.Fatalf("the file's other keys changed: %+v", p)
	}
}
