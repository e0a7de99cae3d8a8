package cloud

import (
	"strings"
	"testing"
	"time"
)

// k6's order: defaults, options.cloud, K6_CLOUD_*, the --out argument.
func TestConfigLayers(t *testing.T) {
	opts := []byte(`{"cloud":{"name":"from options","projectID":5,"token":"opt-token"}}`)
	cfg, err := ParseConfig(Inputs{Options: opts, ScriptPath: "dir/s.js",
		Env: map[string]string{"K6_CLOUD_PROJECT_ID": "9", "K6_CLOUD_AGGREGATION_PERIOD": "5s", "K6_CLOUD_METRIC_PUSH_INTERVAL": "10000"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "from options" || cfg.ProjectID != 9 || cfg.Token != "opt-token" || cfg.AggregationPeriod != 5*time.Second ||
		cfg.MetricPushInterval != 10*time.Second || cfg.Host != "https://ingest.k6.io" || cfg.AggregationWaitPeriod != 8*time.Second {
		t.Fatalf("%+v", cfg)
	}
	cfg, _ = ParseConfig(Inputs{Arg: "from arg", Options: opts, Env: map[string]string{"K6_CLOUD_NAME": "from env"}})
	if cfg.Name != "from arg" {
		t.Fatalf("name %q", cfg.Name)
	}
	cfg, _ = ParseConfig(Inputs{ScriptPath: "/a/b/script.js"})
	if cfg.Name != "script.js" {
		t.Fatalf("name %q", cfg.Name)
	}
	cfg, _ = ParseConfig(Inputs{ScriptPath: "-"})
	if cfg.Name != "k6 test" {
		t.Fatalf("name %q", cfg.Name)
	}
	// k6 v2.2.0 (observed): options.ext.loadimpact is ignored, silently.
	cfg, _ = ParseConfig(Inputs{ScriptPath: "a.js", Options: []byte(`{"ext":{"loadimpact":{"name":"x","projectID":55}}}`)})
	if cfg.Name != "a.js" || cfg.ProjectID != 0 {
		t.Fatalf("ext.loadimpact: name %q, project %d", cfg.Name, cfg.ProjectID)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	for env, want := range map[string]string{
		"K6_CLOUD_AGGREGATION_PERIOD=1500ms":   "K6_CLOUD_AGGREGATION_PERIOD: aggregation period is not allowed to have sub-second precision",
		"K6_CLOUD_AGGREGATION_WAIT_PERIOD=0":   "K6_CLOUD_AGGREGATION_WAIT_PERIOD: aggregation wait period is not allowed to be zero",
		"K6_CLOUD_METRIC_PUSH_CONCURRENCY=0":   "K6_CLOUD_METRIC_PUSH_CONCURRENCY: metrics push concurrency must be a positive number but is 0",
		"K6_CLOUD_MAX_TIME_SERIES_IN_BATCH=-1": "K6_CLOUD_MAX_TIME_SERIES_IN_BATCH",
		"K6_CLOUD_API_VERSION=1":               "v1 is not supported anymore",
		"K6_CLOUD_PROJECT_ID=abc":              `K6_CLOUD_PROJECT_ID="abc": want an integer`,
		"K6_CLOUD_TIMEOUT=soon":                "K6_CLOUD_TIMEOUT",
		"K6_CLOUD_STOP_ON_ERROR=maybe":         "K6_CLOUD_STOP_ON_ERROR",
		"K6_CLOUD_HOST=ftp://x":                "K6_CLOUD_HOST",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := ParseConfig(Inputs{ScriptPath: "a.js", Env: map[string]string{k: v}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", env, err, want)
		}
	}
	if _, err := New(Params{Config: Defaults(), Duration: 0}); err == nil || !strings.Contains(err.Error(), "unspecified duration") {
		t.Errorf("no duration: %v", err)
	}
	if _, err := New(Params{Config: Defaults(), Duration: time.Second, SystemTags: []string{"name", "status"}}); err == nil ||
		!strings.Contains(err.Error(), "needs the following system tags enabled: method, error, check, group") {
		t.Errorf("system tags: %v", err)
	}
}
