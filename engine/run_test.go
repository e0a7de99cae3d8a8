package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
)

func runScript(t *testing.T, src string, reg *jsmodule.Registry, mut func(*RunConfig)) (Result, string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cfg := RunConfig{Script: p, Registry: reg, Quiet: true, SummaryMode: "compact", Stdout: &out, Stderr: &errb}
	if mut != nil {
		mut(&cfg)
	}
	res := Run(context.Background(), cfg)
	return res, out.String(), errb.String()
}

// opModule is a stand-in for k6/x/buzz: it records a sample per call with
// the VU's tags plus its own.
func opModule(vu jsmodule.VU) (jsmodule.Instance, error) {
	m, err := vu.Metrics().Registry().New("fake_op_duration", metrics.Trend, metrics.Time)
	if err != nil {
		return nil, err
	}
	return jsmodule.StaticExports{Named: map[string]any{
		"op": func(name string) {
			vu.Metrics().Push(metrics.Sample{Metric: m, Tags: vu.State().Tags.TagSet().With("op", name), Value: 3})
		},
		"boom": func() { panic("module bug") },
		"info": func() string {
			st := vu.State()
			return st.Scenario + "," + fmt.Sprint(!st.ScenarioStart.IsZero()) + "," + string(vu.TestOptions())
		},
	}}, nil
}

func TestExtensionModuleSamplesReachThresholdsAndSummary(t *testing.T) {
	reg := jshost.NewRegistry()
	if err := reg.Register("k6/x/fake", jsmodule.ModuleFunc(opModule)); err != nil {
		t.Fatal(err)
	}
	res, _, errs := runScript(t, `
import { op } from "k6/x/fake";
export const options = { iterations: 3, thresholds: { "fake_op_duration{op:publish}": ["max<2"] } };
export default function () { op("publish"); op("auth"); }`, reg, nil)
	if res.ExitCode != ExitThresholdsFailed {
		t.Fatalf("exit %d (%v), want 99: the sub-metric threshold sees the module's samples\n%s", res.ExitCode, res.Err, errs)
	}
	sink, _ := res.Summary.Lookup("fake_op_duration{op:publish}")
	ts, ok := sink.(*metrics.TrendSink)
	if !ok || ts.Count() != 3 {
		t.Fatalf("publish sub-metric = %#v", sink)
	}
}

func TestGoPanicInModuleExits109(t *testing.T) {
	reg := jshost.NewRegistry()
	if err := reg.Register("k6/x/fake", jsmodule.ModuleFunc(opModule)); err != nil {
		t.Fatal(err)
	}
	res, _, errs := runScript(t, `
import { boom } from "k6/x/fake";
export const options = { vus: 1, duration: "10s" };
export default function () { boom(); }`, reg, nil)
	if res.ExitCode != ExitGoPanic || !strings.Contains(errs, "module bug") {
		t.Fatalf("exit %d (%v)\n%s", res.ExitCode, res.Err, errs)
	}
}

func TestTestFailLosesToEarlierErrorsButNotToEndThresholds(t *testing.T) {
	res, _, _ := runScript(t, `
import exec from "k6/execution";
export function setup() { exec.test.fail("x"); throw new Error("then setup broke"); }
export default function () {}`, nil, nil)
	if res.ExitCode != ExitScriptException {
		t.Fatalf("exit %d: the setup exception came first", res.ExitCode)
	}
}

func TestModulesSeeScenarioAndTestOptions(t *testing.T) {
	reg := jshost.NewRegistry()
	if err := reg.Register("k6/x/fake", jsmodule.ModuleFunc(opModule)); err != nil {
		t.Fatal(err)
	}
	res, _, errs := runScript(t, `
import { info } from "k6/x/fake";
export const options = { scenarios: { main: { executor: "shared-iterations", iterations: 1 } }, executionSegment: "0:1/2", executionSegmentSequence: "0,1/2,1" };
export default function () { console.log("info=" + info()); }`, reg, nil)
	if res.ExitCode != 0 || !strings.Contains(errs, `info=main,true,{`) || !strings.Contains(errs, `\"executionSegment\":\"0:1/2\"`) {
		t.Fatalf("exit %d\n%s", res.ExitCode, errs)
	}
}
