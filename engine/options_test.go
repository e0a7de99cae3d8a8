package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
)

func TestParseOptionsJSON(t *testing.T) {
	o, warns, err := ParseOptionsJSON(json.RawMessage(`{
		"tags": {"a": "b"}, "setupTimeout": "1m30s", "teardownTimeout": 1500,
		"summaryTrendStats": ["avg", "p(99.9)"], "noSetup": true, "executionSegment": "1/2:1",
		"thresholds": {"iterations": ["count>1"]}, "batch": 10, "bogus": 1, "alsoBogus": 2, "vus": 3
	}`), "script options")
	if err != nil {
		t.Fatal(err)
	}
	if o.Tags["a"] != "b" || *o.SetupTimeout != 90*time.Second || *o.TeardownTimeout != 1500*time.Millisecond ||
		!*o.NoSetup || *o.ExecutionSegment != "1/2:1" || len(o.Thresholds) != 1 || o.SummaryTrendStats[1] != "p(99.9)" {
		t.Fatalf("parsed %+v", o)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "alsoBogus, bogus") {
		t.Fatalf("warnings %v: unknown keys must be listed, known k6 keys (batch, vus) must not", warns)
	}
}

func TestParseOptionsJSONTypeErrorsNameTheKey(t *testing.T) {
	for src, key := range map[string]string{
		`{"tags": "x"}`:                 "tags",
		`{"setupTimeout": "soon"}`:      "setupTimeout",
		`{"noTeardown": "yes"}`:         "noTeardown",
		`{"summaryTrendStats": "avg"}`:  "summaryTrendStats",
		`[1,2]`:                         "options must be an object",
		`{"thresholds": ["p<1"]}`:       "thresholds",
		`{"executionSegment": {"a":1}}`: "executionSegment",
	} {
		_, _, err := ParseOptionsJSON(json.RawMessage(src), "script options")
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "script options") {
			t.Errorf("%s: err = %v, want it to name %q", src, err, key)
		}
	}
}

func TestLayersReplaceMapsWholeAndFieldsOneByOne(t *testing.T) {
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	file := Options{Tags: map[string]string{"from": "file", "keep": "no"}, SetupTimeout: d("10s")}
	script := Options{TeardownTimeout: d("20s")}
	cli := Options{Tags: map[string]string{"from": "cli"}}
	r, err := Options{}.Apply(file).Apply(script).Apply(Options{}).Apply(cli).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tags) != 1 || r.Tags["from"] != "cli" {
		t.Fatalf("tags %v: a higher layer replaces the whole map", r.Tags)
	}
	if r.SetupTimeout != 10*time.Second || r.TeardownTimeout != 20*time.Second || r.HandleSummaryTimeout != DefaultHandleSummaryTimeout {
		t.Fatalf("timeouts %v %v %v", r.SetupTimeout, r.TeardownTimeout, r.HandleSummaryTimeout)
	}
	if strings.Join(r.SummaryTrendStats, ",") != "avg,min,med,max,p(90),p(95)" {
		t.Fatalf("default trend stats %v", r.SummaryTrendStats)
	}
}

func TestResolveRejectsBadValues(t *testing.T) {
	unit := "minutes"
	neg := -time.Second
	for name, o := range map[string]Options{
		"trend stat":   {SummaryTrendStats: []string{"avg", "p(101)"}},
		"time unit":    {SummaryTimeUnit: &unit},
		"empty tag":    {Tags: map[string]string{"k": ""}},
		"setupTimeout": {SetupTimeout: &neg},
	} {
		if _, err := o.Resolve(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1d2h": 26 * time.Hour, "1.5s": 1500 * time.Millisecond, "250": 250 * time.Millisecond, "2d": 48 * time.Hour,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDuration("soon"); err == nil {
		t.Error("accepted soon")
	}
}

func TestScriptEnv(t *testing.T) {
	sys := []string{"HOME=/root", "SHARED=sys", "EQ=a=b"}
	env, err := ScriptEnv(sys, true, []string{"SHARED=flag", "NEW=1"})
	if err != nil {
		t.Fatal(err)
	}
	if env["HOME"] != "/root" || env["SHARED"] != "flag" || env["NEW"] != "1" || env["EQ"] != "a=b" {
		t.Fatalf("env %v", env)
	}
	env, _ = ScriptEnv(sys, false, []string{"X=y"})
	if len(env) != 1 || env["X"] != "y" {
		t.Fatalf("without system env: %v", env)
	}
	for _, bad := range []string{"NOEQUALS", "1X=y", "A-B=c", "=v"} {
		if _, err := ScriptEnv(nil, false, []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestExitCodeMapping(t *testing.T) {
	if ExitCode(nil) != 0 || ExitCode(configerr.New(errString("x"))) != 104 ||
		ExitCode(&RunError{Code: 42, Err: errString("x")}) != 42 || ExitCode(errString("plain")) != 255 {
		t.Fatal("exit code mapping broken")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
