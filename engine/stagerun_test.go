package engine

import (
	"strings"
	"testing"
)

// namedRunScript records 100 during stage 0 and 0 afterwards: stage 0 is a
// fifth of the 'a' run, so avg over the run is about 20 while stage 0 alone
// is 100. THRESH is replaced by the threshold and NAMES by the stage names.
const namedRunScript = `
import exec from "k6/execution";
import { sleep } from "k6";
import { Trend } from "k6/metrics";
const v = new Trend("spiky");
export const options = {
  scenarios: { s: { executor: "ramping-vus", startVUs: 1, gracefulRampDown: "0s",
    stages: [{ duration: "200ms", target: 1, name: "N0" }, { duration: "800ms", target: 1, name: "N1" },
             { duration: "300ms", target: 1, name: "N2" }] } },
  thresholds: { spiky: [{ threshold: "THRESH", window: "stage", scenario: "s" }] },
};
export default function () {
  v.add(exec.scenario.stage.index === 0 ? 100 : 0);
  sleep(0.02);
}`

func namedRun(t *testing.T, thresh string, names ...string) Result {
	t.Helper()
	src := strings.NewReplacer("THRESH", thresh, "N0", names[0], "N1", names[1], "N2", names[2]).Replace(namedRunScript)
	res, _, errs := runScript(t, src, nil, nil)
	if res.Info == nil {
		t.Fatalf("no run info: exit %d\n%s", res.ExitCode, errs)
	}
	return res
}

// Stages named a, a, b are two windows; the spike in the first 'a' stage is
// judged over the whole 'a' run, where it is diluted below the limit.
func TestNamedStagesAreOneWindow(t *testing.T) {
	res := namedRun(t, "avg<60", "a", "a", "b")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d (%v): the spike is diluted over the 'a' run", res.ExitCode, res.Err)
	}
	vs := res.Info.StageVerdicts
	if len(vs) != 2 {
		t.Fatalf("%d verdicts, want 2 (a, b): %+v", len(vs), vs)
	}
	a, b := vs[0], vs[1]
	if a.StageName != "a" || a.Stage != 0 || b.StageName != "b" || b.Stage != 2 {
		t.Fatalf("verdicts %+v", vs)
	}
	if !a.OK || a.Value <= 0 || a.Value >= 60 {
		t.Errorf("window a: ok=%v avg %g, want between 0 and 60 (stage 0 alone is 100)", a.OK, a.Value)
	}
	if d := a.End.Sub(a.Start); d < 900e6 || d > 1500e6 {
		t.Errorf("window a spans %s, want its two stages (1 s)", d)
	}
	if !b.OK || b.Value != 0 {
		t.Errorf("window b %+v", b)
	}
}

// The same run with distinct names judges stage 0 on its own: it fails.
func TestDistinctNamesAreJudgedPerStage(t *testing.T) {
	res := namedRun(t, "avg<60", "a1", "a2", "b")
	if res.ExitCode != ExitThresholdsFailed {
		t.Fatalf("exit %d (%v), want 99: stage a1 alone averages 100", res.ExitCode, res.Err)
	}
	if vs := res.Info.StageVerdicts; len(vs) != 3 || vs[0].OK || vs[0].Value != 100 {
		t.Fatalf("verdicts %+v", vs)
	}
}

// When the whole run's statistic crosses the limit, window 'a' fails.
func TestNamedRunCrossingTheLimitFails(t *testing.T) {
	res := namedRun(t, "avg<5", "a", "a", "b")
	if res.ExitCode != ExitThresholdsFailed {
		t.Fatalf("exit %d (%v), want 99", res.ExitCode, res.Err)
	}
	vs := res.Info.StageVerdicts
	if len(vs) != 2 || vs[0].OK || vs[0].StageName != "a" || !vs[1].OK {
		t.Fatalf("verdicts %+v: want 'a' failed, 'b' passed", vs)
	}
}
