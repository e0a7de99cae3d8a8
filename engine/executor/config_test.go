package executor

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
)

func parseOne(t *testing.T, js string) Config {
	t.Helper()
	cs, _, err := ParseScenarios(json.RawMessage(js))
	if err != nil {
		t.Fatalf("ParseScenarios: %v", err)
	}
	if len(cs) != 1 {
		t.Fatalf("got %d scenarios", len(cs))
	}
	return cs[0]
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"1m30s", 90 * time.Second},
		{"500ms", 500 * time.Millisecond},
		{"1d2h", 26 * time.Hour},
		{"2d", 48 * time.Hour},
		{"1500", 1500 * time.Millisecond},
		{"0.5", 500 * time.Microsecond},
		{"1.5s", 1500 * time.Millisecond},
		{"\t-1 ", -time.Millisecond},
		{"106751d", 106751 * 24 * time.Hour},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	// Values past time.Duration's range are errors, not wrapped values.
	for _, bad := range []string{"", "abc", "1x", "d", "1d-2h", "1e300", "999999999999d", "106751d23h59m59s", "9223372036854.7758"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestDefaults(t *testing.T) {
	cases := []struct {
		name, js string
		want     Config
	}{
		{"shared-iterations defaults to 1 VU, 1 iteration, maxDuration 10m", `{"s":{"executor":"shared-iterations"}}`,
			&SharedIterationsConfig{BaseConfig: BaseConfig{Name: "s", Type: SharedIterations, GracefulStop: 30 * time.Second, Exec: "default"}, VUs: 1, Iterations: 1, MaxDuration: 10 * time.Minute}},
		{"per-vu-iterations defaults", `{"p":{"executor":"per-vu-iterations","vus":3}}`,
			&PerVUIterationsConfig{BaseConfig: BaseConfig{Name: "p", Type: PerVUIterations, GracefulStop: 30 * time.Second, Exec: "default"}, VUs: 3, Iterations: 1, MaxDuration: 10 * time.Minute}},
		{"constant-vus defaults to 1 VU", `{"c":{"executor":"constant-vus","duration":"2s"}}`,
			&ConstantVUsConfig{BaseConfig: BaseConfig{Name: "c", Type: ConstantVUs, GracefulStop: 30 * time.Second, Exec: "default"}, VUs: 1, Duration: 2 * time.Second}},
		{"ramping-vus startVUs defaults to 1 and gracefulRampDown to 30s", `{"r":{"executor":"ramping-vus","stages":[{"duration":"10s","target":5,"name":"warm"}]}}`,
			&RampingVUsConfig{BaseConfig: BaseConfig{Name: "r", Type: RampingVUs, GracefulStop: 30 * time.Second, Exec: "default"}, StartVUs: 1, Stages: []Stage{{10 * time.Second, 5, "warm"}}, GracefulRampDown: 30 * time.Second}},
		{"constant-arrival-rate maxVUs defaults to preAllocatedVUs, timeUnit to 1s", `{"a":{"executor":"constant-arrival-rate","rate":20,"duration":"1m","preAllocatedVUs":7}}`,
			&ConstantArrivalRateConfig{BaseConfig: BaseConfig{Name: "a", Type: ConstantArrivalRate, GracefulStop: 30 * time.Second, Exec: "default"}, Rate: 20, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 7, MaxVUs: 7}},
		{"ramping-arrival-rate startRate defaults to 0", `{"b":{"executor":"ramping-arrival-rate","stages":[{"duration":1000,"target":3}],"preAllocatedVUs":2,"maxVUs":4,"timeUnit":"1m"}}`,
			&RampingArrivalRateConfig{BaseConfig: BaseConfig{Name: "b", Type: RampingArrivalRate, GracefulStop: 30 * time.Second, Exec: "default"}, TimeUnit: time.Minute, Stages: []Stage{{time.Second, 3, ""}}, PreAllocatedVUs: 2, MaxVUs: 4}},
		{"common fields", `{"x":{"executor":"constant-vus","duration":"1s","startTime":"1m","gracefulStop":0,"exec":"fn","env":{"A":"1","N":2},"tags":{"t":"v"}}}`,
			&ConstantVUsConfig{BaseConfig: BaseConfig{Name: "x", Type: ConstantVUs, StartTime: time.Minute, Exec: "fn", Env: map[string]string{"A": "1", "N": "2"}, Tags: map[string]string{"t": "v"}}, VUs: 1, Duration: time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseOne(t, c.js)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestValidationErrorsNameScenarioAndKey(t *testing.T) {
	cases := []struct {
		name, js, want string
	}{
		{"unknown executor", `{"s":{"executor":"warp-speed"}}`, `scenarios.s.executor: unknown executor "warp-speed"`},
		{"missing executor", `{"s":{"vus":1}}`, `scenarios.s.executor: is required`},
		// k6 v2.2.0: "unknown executor type 'externally-controlled'", exit 104 (observed).
		{"externally-controlled removed in k6 v2", `{"s":{"executor":"externally-controlled","vus":1,"duration":"1s"}}`, `scenarios.s.executor: unknown executor type "externally-controlled": the externally-controlled executor was removed in k6 v2.0.0`},
		{"bad scenario name", `{"a b":{"executor":"constant-vus","duration":"1s"}}`, `scenarios.a b: invalid scenario name`},
		{"shared-iterations iterations below vus", `{"s":{"executor":"shared-iterations","vus":5,"iterations":3}}`, `scenarios.s.iterations: the number of iterations (3) can't be less than the number of VUs (5)`},
		{"maxDuration below 1s", `{"s":{"executor":"per-vu-iterations","maxDuration":"500ms"}}`, `scenarios.s.maxDuration: must be at least 1s`},
		{"per-vu-iterations zero iterations", `{"s":{"executor":"per-vu-iterations","iterations":0}}`, `scenarios.s.iterations: must be greater than 0`},
		{"constant-vus needs a duration", `{"s":{"executor":"constant-vus"}}`, `scenarios.s.duration: is required`},
		{"constant-vus zero vus", `{"s":{"executor":"constant-vus","vus":0,"duration":"1s"}}`, `scenarios.s.vus: must be greater than 0`},
		{"ramping-vus needs stages", `{"s":{"executor":"ramping-vus"}}`, `scenarios.s.stages: is required`},
		{"ramping-vus stage target required", `{"s":{"executor":"ramping-vus","stages":[{"duration":"1s"}]}}`, `scenarios.s.stages[0].target: is required`},
		{"ramping-vus negative target", `{"s":{"executor":"ramping-vus","stages":[{"duration":"1s","target":2},{"duration":"1s","target":-1}]}}`, `scenarios.s.stages[1].target: must not be negative`},
		{"ramping-vus all zero", `{"s":{"executor":"ramping-vus","startVUs":0,"stages":[{"duration":"1s","target":0}]}}`, `either startVUs or one of the stage targets must be greater than 0`},
		{"ramping-vus above 100M", `{"s":{"executor":"ramping-vus","stages":[{"duration":"1s","target":100000001}]}}`, `scenarios.s.stages[0].target: must not be above 100000000`},
		{"arrival rate needs rate", `{"s":{"executor":"constant-arrival-rate","duration":"1s","preAllocatedVUs":1}}`, `scenarios.s.rate: is required`},
		{"arrival rate needs preAllocatedVUs", `{"s":{"executor":"constant-arrival-rate","rate":1,"duration":"1s"}}`, `scenarios.s.preAllocatedVUs: is required`},
		{"maxVUs below preAllocatedVUs", `{"s":{"executor":"constant-arrival-rate","rate":1,"duration":"1s","preAllocatedVUs":3,"maxVUs":2}}`, `scenarios.s.maxVUs: can't be less than preAllocatedVUs (3)`},
		{"fractional rate", `{"s":{"executor":"constant-arrival-rate","rate":1.5,"duration":"1s","preAllocatedVUs":1}}`, `scenarios.s.rate: must be a whole number`},
		{"zero timeUnit", `{"s":{"executor":"constant-arrival-rate","rate":1,"timeUnit":"0s","duration":"1s","preAllocatedVUs":1}}`, `scenarios.s.timeUnit: must be greater than 0`},
		{"ramping-arrival-rate negative startRate", `{"s":{"executor":"ramping-arrival-rate","startRate":-1,"stages":[{"duration":"1s","target":1}],"preAllocatedVUs":1}}`, `scenarios.s.startRate: must not be negative`},
		{"negative startTime", `{"s":{"executor":"constant-vus","duration":"1s","startTime":"-1s"}}`, `scenarios.s.startTime: must not be negative`},
		{"empty exec", `{"s":{"executor":"constant-vus","duration":"1s","exec":""}}`, `scenarios.s.exec: must name an exported function`},
		{"bad duration string", `{"s":{"executor":"constant-vus","duration":"soon"}}`, `scenarios.s.duration: "soon" is not a valid duration`},
		{"vus as a string", `{"s":{"executor":"constant-vus","duration":"1s","vus":"3"}}`, `scenarios.s.vus: must be a number`},
		{"scenario not an object", `{"s":5}`, `scenarios.s: must be an object`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseScenarios(json.RawMessage(c.js))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, c.want)
			}
			var ce *configerr.Error
			if !errors.As(err, &ce) || ce.ExitCode() != 104 {
				t.Errorf("error %T is not a *configerr.Error with exit code 104", err)
			}
		})
	}
}

func TestUnknownKeysInAScenarioAreErrors(t *testing.T) {
	_, _, err := ParseScenarios(json.RawMessage(`{"s":{"executor":"constant-vus","duration":"1s","startime":"1s"}}`))
	var ce *configerr.Error
	if !errors.As(err, &ce) || ce.ExitCode() != 104 || !strings.Contains(err.Error(), "scenarios.s.startime: unknown option for constant-vus") {
		t.Fatalf("err %v", err)
	}
}

func TestScenariosSortedByStartTimeThenName(t *testing.T) {
	cs, _, err := ParseScenarios(json.RawMessage(`{
		"b":{"executor":"constant-vus","duration":"1s"},
		"a":{"executor":"constant-vus","duration":"1s","startTime":"2s"},
		"c":{"executor":"constant-vus","duration":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Base().Name)
	}
	if strings.Join(names, ",") != "b,c,a" {
		t.Fatalf("order %v", names)
	}
}

func scenariosOf(t *testing.T, js string) ([]Config, []string, error) {
	t.Helper()
	o, err := ParseExecutionOptions(json.RawMessage(js))
	if err != nil {
		return nil, nil, err
	}
	return o.DeriveScenarios()
}

func TestShortcuts(t *testing.T) {
	base := func(typ string) BaseConfig {
		return BaseConfig{Name: "default", Type: typ, GracefulStop: 30 * time.Second, Exec: "default"}
	}
	cases := []struct {
		name, js string
		want     Config
		warn     string
	}{
		{"iterations gives shared-iterations with vus", `{"vus":2,"iterations":4}`,
			&SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: 2, Iterations: 4, MaxDuration: 10 * time.Minute}, ""},
		{"iterations plus duration makes duration the maxDuration", `{"iterations":3,"duration":"20s"}`,
			&SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: 1, Iterations: 3, MaxDuration: 20 * time.Second}, ""},
		{"duration gives constant-vus", `{"vus":3,"duration":"5s"}`,
			&ConstantVUsConfig{BaseConfig: base(ConstantVUs), VUs: 3, Duration: 5 * time.Second}, ""},
		{"stages give ramping-vus with startVUs 1 when vus is unset", `{"stages":[{"duration":"2s","target":3}]}`,
			&RampingVUsConfig{BaseConfig: base(RampingVUs), StartVUs: 1, Stages: []Stage{{2 * time.Second, 3, ""}}, GracefulRampDown: 30 * time.Second}, ""},
		{"stages take startVUs from vus", `{"vus":5,"stages":[{"duration":"2s","target":3}]}`,
			&RampingVUsConfig{BaseConfig: base(RampingVUs), StartVUs: 5, Stages: []Stage{{2 * time.Second, 3, ""}}, GracefulRampDown: 30 * time.Second}, ""},
		{"stages without a duration are dropped", `{"stages":[{"target":9},{"duration":"1s","target":2}]}`,
			&RampingVUsConfig{BaseConfig: base(RampingVUs), StartVUs: 1, Stages: []Stage{{time.Second, 2, ""}}, GracefulRampDown: 30 * time.Second}, ""},
		{"nothing set gives one iteration of one VU", `{}`,
			&PerVUIterationsConfig{BaseConfig: base(PerVUIterations), VUs: 1, Iterations: 1, MaxDuration: 10 * time.Minute}, ""},
		{"an empty stages list does not conflict with duration", `{"duration":"2s","stages":[]}`,
			&ConstantVUsConfig{BaseConfig: base(ConstantVUs), VUs: 1, Duration: 2 * time.Second}, ""},
		// k6 v2.1+ (observed on v2.2.0): a bare vus runs that many VUs once each.
		{"v2: bare vus gives shared-iterations of vus", `{"vus":10}`,
			&SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: 10, Iterations: 10, MaxDuration: 10 * time.Minute}, ""},
		{"empty stages warn", `{"stages":[]}`,
			&PerVUIterationsConfig{BaseConfig: base(PerVUIterations), VUs: 1, Iterations: 1, MaxDuration: 10 * time.Minute}, "stages option is empty"},
		{"empty scenarios warn", `{"scenarios":{}}`,
			&PerVUIterationsConfig{BaseConfig: base(PerVUIterations), VUs: 1, Iterations: 1, MaxDuration: 10 * time.Minute}, "scenarios option is empty"},
		{"v2: vus replaces scenarios with k6's warning", `{"vus":7,"scenarios":{"s":{"executor":"constant-vus","duration":"1s"}}}`,
			&SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: 7, Iterations: 7, MaxDuration: 10 * time.Minute}, "`vus=7` overrides scenarios configuration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs, w, err := scenariosOf(t, c.js)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || !reflect.DeepEqual(cs[0], c.want) {
				t.Errorf("got  %+v\nwant %+v", cs, c.want)
			}
			joined := strings.Join(w, "\n")
			if (c.warn == "") != (joined == "") || !strings.Contains(joined, c.warn) {
				t.Errorf("warnings %q, want %q", joined, c.warn)
			}
		})
	}
}

func TestShortcutConflicts(t *testing.T) {
	sc := `"scenarios":{"s":{"executor":"constant-vus","duration":"1s"}}`
	cases := []struct{ name, js, want string }{
		{"iterations with stages", `{"iterations":1,"stages":[{"duration":"1s","target":1}]}`, "iterations and stages"},
		{"iterations with scenarios", `{"iterations":1,` + sc + `}`, "shortcut (iterations) and scenarios"},
		{"duration with stages", `{"duration":"1s","stages":[{"duration":"1s","target":1}]}`, "duration and stages"},
		{"duration with scenarios", `{"duration":"1s",` + sc + `}`, "shortcut (duration) and scenarios"},
		{"stages with scenarios", `{"stages":[{"duration":"1s","target":1}],` + sc + `}`, "shortcut (stages) and scenarios"},
		{"zero duration", `{"duration":"0s"}`, "options.duration: must be greater than 0"},
		{"iterations below vus", `{"vus":3,"iterations":2}`, "can't be less than the number of VUs"},
		{"bad shortcut duration", `{"duration":"forever"}`, "options.duration:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := scenariosOf(t, c.js)
			var ce *configerr.Error
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) {
				t.Fatalf("error = %v, want a *configerr.Error containing %q", err, c.want)
			}
		})
	}
}

func TestMergeReplacesTheExecutionBlock(t *testing.T) {
	script, err := ParseExecutionOptions(json.RawMessage(`{"vus":2,"stages":[{"duration":"10s","target":4}],"iterations":null}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("-u alone only changes vus, so stages get startVUs 5", func(t *testing.T) {
		five := int64(5)
		cli, err := CLIOptions(&five, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, w := Merge(script, cli, "cli")
		if len(w) != 0 {
			t.Errorf("warnings %v", w)
		}
		cs, _, err := m.DeriveScenarios()
		if err != nil {
			t.Fatal(err)
		}
		if r := cs[0].(*RampingVUsConfig); r.StartVUs != 5 || len(r.Stages) != 1 {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("-d drops the script's stages without a warning (the script defined no scenarios)", func(t *testing.T) {
		d := 3 * time.Second
		cli, _ := CLIOptions(nil, &d, nil, nil)
		m, w := Merge(script, cli, "cli")
		if len(w) != 0 {
			t.Errorf("warnings %v", w)
		}
		withScenarios := ExecutionOptions{Scenarios: []byte(`{"s":{"executor":"shared-iterations"}}`)}
		if _, w := Merge(withScenarios, cli, "cli"); len(w) != 1 || w[0] != `"cli" level configuration overrode scenarios configuration entirely` {
			t.Errorf("over scenarios: warnings %v", w)
		}
		cs, _, err := m.DeriveScenarios()
		if err != nil {
			t.Fatal(err)
		}
		if c := cs[0].(*ConstantVUsConfig); c.VUs != 2 || c.Duration != d {
			t.Errorf("got %+v", c)
		}
	})
	t.Run("-s replaces script scenarios", func(t *testing.T) {
		withScenarios, _ := ParseExecutionOptions(json.RawMessage(`{"scenarios":{"s":{"executor":"constant-vus","duration":"1s"}}}`))
		cli, err := CLIOptions(nil, nil, nil, []string{"1s:3", "2s:0"})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := Merge(withScenarios, cli, "cli")
		cs, _, err := m.DeriveScenarios()
		if err != nil {
			t.Fatal(err)
		}
		r := cs[0].(*RampingVUsConfig)
		if r.Name != "default" || len(r.Stages) != 2 || r.Stages[1] != (Stage{Duration: 2 * time.Second}) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("-i over a script duration keeps no maxDuration from the script", func(t *testing.T) {
		withDur, _ := ParseExecutionOptions(json.RawMessage(`{"duration":"1m"}`))
		i := int64(4)
		cli, _ := CLIOptions(nil, nil, &i, nil)
		m, _ := Merge(withDur, cli, "cli")
		cs, _, err := m.DeriveScenarios()
		if err != nil {
			t.Fatal(err)
		}
		if s := cs[0].(*SharedIterationsConfig); s.MaxDuration != 10*time.Minute || s.Iterations != 4 {
			t.Errorf("got %+v", s)
		}
	})
}

func TestStageFlags(t *testing.T) {
	st, err := ParseStagesEnv("10s:5,20s:0")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, []Stage{{10 * time.Second, 5, ""}, {20 * time.Second, 0, ""}}) {
		t.Errorf("got %v", st)
	}
	for _, bad := range []string{"10s", "x:1", "1s:y", "1d:3"} {
		if _, err := ParseStageFlag(bad); err == nil {
			t.Errorf("ParseStageFlag(%q) accepted", bad)
		}
	}
}
