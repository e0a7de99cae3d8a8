package features

import (
	"reflect"
	"strings"
	"testing"
)

// One surface wins (cli, else env, else the config file), names are
// comma-separated and repeated ones count once, an unknown one is logged
// as an error and skipped, a legacy alias warns, and the run tags name the
// enabled flags — as k6 v2.2.0 resolves them (internal/features; observed).
func TestResolve(t *testing.T) {
	var logs []string
	logf := func(level, msg string, fields ...string) {
		logs = append(logs, level+" "+msg+" "+strings.Join(fields, "="))
	}
	f := Resolve(Source{Values: []string{"native-histograms,bogus", " freeze-env "}, Supplied: true},
		map[string]string{"K6_FEATURES": "merge-run-tags"}, Source{Values: []string{"merge-run-tags"}, Supplied: true}, logf)
	if !reflect.DeepEqual(f.Active, []string{"freeze-env", "native-histograms"}) || f.MergeRunTags || !f.FreezeEnv || !f.NativeHistograms {
		t.Errorf("cli wins: %+v", f)
	}
	if len(logs) != 3 || !strings.HasPrefix(logs[1], "error Unknown feature flag feature=bogus=outcome=unknown=source=cli") {
		t.Errorf("logs %q", logs)
	}
	if f := Resolve(Source{}, map[string]string{"K6_FEATURES": ""}, Source{Values: []string{"freeze-env"}, Supplied: true}, logf); len(f.Active) != 0 {
		t.Errorf("an empty K6_FEATURES still wins over the config file: %+v", f)
	}
	if f := Resolve(Source{}, nil, Source{Values: []string{"freeze-env"}, Supplied: true}, logf); !f.FreezeEnv {
		t.Errorf("the config file: %+v", f)
	}
	logs = nil
	f = Resolve(Source{}, map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true"}, Source{}, logf)
	if !f.NativeHistograms || len(logs) != 2 || !strings.Contains(logs[0], "Legacy env var detected") {
		t.Errorf("the legacy alias: %+v %q", f, logs)
	}
	if got := f.Tags(); !reflect.DeepEqual(got, map[string]string{"k6_feature_native_histograms": "true"}) {
		t.Errorf("tags %v", got)
	}
	if f := Resolve(Source{}, nil, Source{}, logf); f.Active == nil || len(f.Active) != 0 {
		t.Errorf("nothing supplied: %+v", f)
	}
}
