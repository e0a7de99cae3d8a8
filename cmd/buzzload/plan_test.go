package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/internal/sysmem"
	"github.com/buzzload/buzzload/modules/plan"
	"github.com/buzzload/buzzload/modules/scenario"
)

// planFor runs `buzzload plan --json` on a scenario and decodes it.
func planFor(t *testing.T, args ...string) *plan.Result {
	t.Helper()
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), append(append([]string{"plan"}, args...), "--json"), cliEnv{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("plan %v: exit %d: %s", args, code, errb.String())
	}
	var r plan.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out.String())
	}
	return &r
}

// TestPlanMatchesARealRun is the plan's honesty check (issue 17): the counts
// it predicts for a scenario match, op by op within ±10 % (and at least
// two, for the stop's boundary), what a real run of the same scenario against the
// embedded relay records. The seed's ops happen before the run and are not
// predicted.
func TestPlanMatchesARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real scenarios (about a minute each)")
	}
	cases := []struct {
		name, script, toml string
		env                []string
	}{
		{"local-desktop legacy", "local-desktop.js", "local-desktop.toml", []string{"DESKTOP_MODE=legacy"}},
		{"local-desktop current", "local-desktop.js", "local-desktop.toml", []string{"DESKTOP_MODE=current"}},
		{"local-smoke", "local-smoke.js", "local-smoke.toml", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res := filepath.Join(dir, "result.json")
			// the report goes to the test's directory, not the package's
			args := []string{"run", "-q", "--result", res, "-e", "BUZZ_REPORT=" + filepath.Join(dir, "report.json")}
			mode := ""
			for _, e := range tc.env {
				args = append(args, "-e", e)
				if v, ok := strings.CutPrefix(e, "DESKTOP_MODE="); ok {
					mode = v
				}
			}
			args = append(args, filepath.Join("..", "..", "scenarios", tc.script))
			var out, errb bytes.Buffer
			if code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb}); code != 0 {
				t.Fatalf("run %s: exit %d\n%s\n%s", tc.script, code, out.String(), errb.String())
			}
			real, err := loadRunOps(res)
			if err != nil {
				t.Fatal(err)
			}
			pargs := []string{filepath.Join("..", "..", "scenarios", tc.toml)}
			if mode != "" {
				pargs = append(pargs, "--mode", mode)
			}
			p := planFor(t, pargs...)
			names := map[string]bool{}
			for op := range real.Ops {
				names[op] = true
			}
			for _, o := range p.Ops {
				names[o.Name] = true
			}
			for op := range names {
				if strings.HasPrefix(op, "seed_") {
					continue
				}
				var got float64
				if s := real.Ops[op]; s != nil {
					got = float64(s.Count)
				}
				want := p.Op(op).Count
				// ±10 %, and at least 2: a periodic op of the two agents
				// at step 2 (a poll every 5 s) may each gain or lose one at
				// the stop's boundary, as the run's own start moves (12–14
				// http_query over runs of the same local-smoke).
				if tol := math.Max(0.1*got, 2); math.Abs(want-got) > tol {
					t.Errorf("%s: plan predicts %.0f, the run recorded %.0f (more than ±10%%, at least 2)", op, want, got)
				}
			}
		})
	}
}

func TestPlanFlagErrors(t *testing.T) {
	toml := filepath.Join("..", "..", "scenarios", "local-desktop.toml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{toml, "--users", "2", "--step", "0"}, "exclusive"},
		{[]string{toml, "--step", "5"}, "--step 5"},
		{[]string{toml, "--step", "first"}, `--step "first"`},
		{[]string{toml, "--users", "2", "--ramp", "soon"}, `--ramp "soon"`},
		{[]string{toml, "--mode", "sideways"}, `--mode "sideways"`},
		{[]string{toml, "--fail-rate", "2"}, "failure rate"},
		{[]string{"missing.toml"}, "missing.toml"},
		{[]string{}, "want one scenario"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"plan"}, tc.args...), cliEnv{Stdout: &out, Stderr: &errb})
		if code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("plan %v: exit %d, stderr %q; want an error naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// scenarios/local-desktop.toml shows every knob inside its minute, current's
// backstop replacement included: its plan counts more desktop_live_eose
// than the same scenario with the backstop out of reach. Fails before the
// backstop ran from the last replacement (audit desktop.md #72: every
// renewal restarted it, and current replaced nothing in the run).
func TestLocalDesktopCurrentReplacesAtTheBackstop(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "local-desktop.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Desktop.Mode != scenario.ModeCurrent {
		t.Fatalf("mode %q", sc.Desktop.Mode)
	}
	with, err := plan.Run(planConfig(sc, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	sc.Desktop.BackstopSecs = 1e6
	without, err := plan.Run(planConfig(sc, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	w, wo := with.Op("desktop_live_eose").Count, without.Op("desktop_live_eose").Count
	if w <= wo {
		t.Errorf("desktop_live_eose %v with the scenario's backstop, %v without: current makes no backstop replacement", w, wo)
	}
	t.Logf("current: %v backstop replacements in the minute", w-wo)
}

// A shape the machine cannot hold is refused before anything starts, by
// plan, seed and run alike, exit 104 naming the key and the memory it
// would need (issue 43). Fails without the fix: plan and run began
// allocating per channel until the machine ran out of memory.
func TestAShapeTooBigForTheMachineIsRefused(t *testing.T) {
	dir := copyTestdata(t, "ops-tiny.toml")
	b, err := os.ReadFile(filepath.Join(dir, "ops-tiny.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// The validation's own bound (10^8 channels) is about 28 GiB here.
	if sysmem.Available() > 28<<30 {
		t.Skip("this machine holds the largest valid shape")
	}
	huge := strings.Replace(string(b), "channels_per_community = 2", "channels_per_community = 100000000", 1)
	if err := os.WriteFile(filepath.Join(dir, "huge.toml"), []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plan", "huge.toml"}, {"run", "-q", "huge.toml"}, {"seed", "huge.toml"}} {
		code, _, errs := runBin(t, dir, nil, args...)
		// Another run on the machine may hold the REST API's port: its
		// warning is not this test's business.
		errs = dropLines(errs, "the REST API could not start")
		if code != 104 || !strings.Contains(errs, "shape.channels_per_community: 1 communities × 100000000 channels need about") ||
			!strings.Contains(errs, "available") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, errs)
		}
	}
}

// dropLines removes the lines of s that contain substr.
func dropLines(s, substr string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, substr) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// A VU of several humans starts them together: the plan starts every
// human (not one per VU), the group's at the VU's moment. Fails without
// planConfig's humans_per_vu (a third of the humans would start).
func TestPlanStartsEveryHumanOfAVU(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "local-smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	one := planConfig(sc, 0, 0).Starts[scenario.KindHuman]
	sc.Population.HumansPerVU = 3
	three := planConfig(sc, 0, 0).Starts[scenario.KindHuman]
	if len(one) == 0 || len(three) != len(one) {
		t.Fatalf("%d humans start with 3 a VU, %d with 1", len(three), len(one))
	}
	for i, at := range three {
		if at != three[i/3*3] {
			t.Errorf("human %d starts at %v, its VU's first at %v", i, at, three[i/3*3])
		}
	}
}
