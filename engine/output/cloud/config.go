// Package cloud is `--out cloud`: k6's Grafana Cloud k6 output as k6
// v1.8.1 sends it (observed against a capture server on 127.0.0.1, and its
// documentation: results-output/real-time/cloud). Without
// K6_CLOUD_PUSH_REF_ID it creates the test run (POST /v1/tests), streams
// metrics (POST /v2/metrics/<ref>, metrics protocol 2.0: wire.go) and
// finishes the run (POST /v1/tests/<ref>) with the run and result status;
// with it (what k6-operator gives cloud-output and Private Load Zone
// runners) it only streams.
//
// A cloud that is down or refuses costs pushes, never the run: pushes are
// counted, one warning when they start failing, the total at the end, and
// the exit code is the run's own. The token is sent only in the
// Authorization header and never printed.
package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Name is the output's name in --out.
const Name = "cloud"

// Config is the output's settings: k6's K6_CLOUD_* variables and
// options.cloud, with k6's defaults.
type Config struct {
	Token     string
	ProjectID int64
	// StackID is read as k6 reads it; k6's cloud output sends nothing of it
	// (observed: no X-Stack-Id with K6_CLOUD_STACK_ID set).
	StackID int64
	Name    string
	Host    string
	// HostV6 is the v6 and provisioning APIs' host (`cloud run
	// --local-execution`; k6: "for test purposes only").
	HostV6         string
	WebAppURL      string
	TestRunDetails string
	Timeout        time.Duration
	StopOnError    bool
	APIVersion     int64
	// PushRefID is an existing test run: only push to it.
	PushRefID string
	// TestRunID comes from the script's environment
	// (-e K6_CLOUDRUN_TEST_RUN_ID): push to it and finish it, as k6 does.
	TestRunID             string
	MaxTimeSeriesInBatch  int64
	MetricPushInterval    time.Duration
	MetricPushConcurrency int64
	AggregationPeriod     time.Duration
	AggregationWaitPeriod time.Duration
}

// Defaults are k6 v1.8.1's (cloudapi.NewConfig).
func Defaults() Config {
	return Config{
		Host:                  "https://ingest.k6.io",
		HostV6:                "https://api.k6.io",
		WebAppURL:             "https://app.k6.io",
		Timeout:               time.Minute,
		APIVersion:            2,
		MaxTimeSeriesInBatch:  1000,
		MetricPushInterval:    time.Second,
		MetricPushConcurrency: 1,
		AggregationPeriod:     3 * time.Second,
		AggregationWaitPeriod: 8 * time.Second,
	}
}

// duration reads k6's durations: a Go duration ("5s") or a number of
// milliseconds.
type duration struct{ d time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		d.d = time.Duration(ms * float64(time.Millisecond))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 5s or a number of milliseconds, got %q", s)
	}
	d.d = v
	return nil
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return d.UnmarshalText([]byte(s))
	}
	return d.UnmarshalText(b)
}

// scriptOptions is what k6 takes from options.cloud (or the older
// not options.ext.loadimpact since k6 v2): name, projectID, token, stackID.
type scriptOptions struct {
	Name      *string `json:"name"`
	ProjectID *int64  `json:"projectID"`
	Token     *string `json:"token"`
	StackID   *int64  `json:"stackID"`
}

// Inputs are where the settings come from.
type Inputs struct {
	// Arg is what follows "cloud=" in --out: the test run's name.
	Arg string
	// Env is the process environment (K6_CLOUD_*).
	Env map[string]string
	// ScriptEnv is the script's environment (-e): K6_CLOUDRUN_TEST_RUN_ID.
	ScriptEnv map[string]string
	// Options is the run's merged options JSON (options.cloud, options.ext).
	Options json.RawMessage
	// ScriptPath names the test run when nothing else does.
	ScriptPath string
}

// ParseConfig combines k6's defaults, options.cloud, the environment and
// the --out argument, in k6's order (each later one wins). An error names
// the setting.
func ParseConfig(in Inputs) (Config, error) {
	cfg := Defaults()
	// options.ext.loadimpact is ignored, as k6 v2 ignores it (#5774;
	// observed on v2.2.0: no warning, the create names the script).
	var opts struct {
		Cloud json.RawMessage `json:"cloud"`
	}
	if len(in.Options) > 0 {
		if err := json.Unmarshal(in.Options, &opts); err != nil {
			return cfg, fmt.Errorf("options: %w", err)
		}
	}
	src := opts.Cloud
	if src != nil && string(src) != "null" {
		var so scriptOptions
		if err := json.Unmarshal(src, &so); err != nil {
			return cfg, fmt.Errorf("options.cloud: %w", err)
		}
		setIf(&cfg.Name, so.Name)
		setIf(&cfg.ProjectID, so.ProjectID)
		setIf(&cfg.Token, so.Token)
		setIf(&cfg.StackID, so.StackID)
	}
	if err := cfg.fromEnv(in.Env); err != nil {
		return cfg, err
	}
	if in.Arg != "" {
		cfg.Name = in.Arg
	}
	if cfg.Name == "" {
		if in.ScriptPath == "" {
			return cfg, errors.New("script name not set, please specify K6_CLOUD_NAME or options.cloud.name")
		}
		cfg.Name = baseName(in.ScriptPath)
	}
	if cfg.Name == "-" {
		cfg.Name = "k6 test"
	}
	cfg.Host = strings.TrimRight(cfg.Host, "/")
	cfg.TestRunID = in.ScriptEnv["K6_CLOUDRUN_TEST_RUN_ID"]
	return cfg, cfg.validate()
}

func (c Config) validate() error {
	switch {
	case c.APIVersion == 1:
		return errors.New("K6_CLOUD_API_VERSION: v1 is not supported anymore")
	case c.APIVersion != 2:
		return fmt.Errorf("K6_CLOUD_API_VERSION: v%d is an unexpected version", c.APIVersion)
	case c.MetricPushConcurrency < 1:
		return fmt.Errorf("K6_CLOUD_METRIC_PUSH_CONCURRENCY: metrics push concurrency must be a positive number but is %d", c.MetricPushConcurrency)
	case c.MaxTimeSeriesInBatch < 1:
		return fmt.Errorf("K6_CLOUD_MAX_TIME_SERIES_IN_BATCH: max allowed number of time series in a single batch must be a positive number but is %d", c.MaxTimeSeriesInBatch)
	case c.MetricPushInterval <= 0:
		return errors.New("K6_CLOUD_METRIC_PUSH_INTERVAL: must be positive")
	case c.Timeout <= 0:
		return errors.New("K6_CLOUD_TIMEOUT: must be positive")
	case !strings.HasPrefix(c.Host, "http://") && !strings.HasPrefix(c.Host, "https://"):
		return fmt.Errorf("K6_CLOUD_HOST: want an http:// or https:// URL, got %q", c.Host)
	}
	for _, p := range []struct {
		key string
		d   time.Duration
	}{{"K6_CLOUD_AGGREGATION_PERIOD: aggregation period", c.AggregationPeriod},
		{"K6_CLOUD_AGGREGATION_WAIT_PERIOD: aggregation wait period", c.AggregationWaitPeriod}} {
		if p.d <= 0 {
			return fmt.Errorf("%s is not allowed to be zero", p.key)
		}
		if p.d != p.d.Truncate(time.Second) {
			return fmt.Errorf("%s is not allowed to have sub-second precision", p.key)
		}
	}
	return nil
}

// ResultsURL is where the run's results are shown (k6's URLForResults).
func (c Config) ResultsURL(ref string) string {
	if c.TestRunDetails != "" {
		return c.TestRunDetails
	}
	return c.WebAppURL + "/runs/" + ref
}

// fromEnv reads the K6_CLOUD_* variables k6 reads (cloudapi.Config's
// envconfig tags); K6_CLOUD_NO_COMPRESS is accepted and, as in k6's
// protocol 2.0, unused.
func (c *Config) fromEnv(env map[string]string) error {
	strs := []struct {
		key string
		dst *string
	}{{"K6_CLOUD_TOKEN", &c.Token}, {"K6_CLOUD_NAME", &c.Name}, {"K6_CLOUD_HOST", &c.Host}, {"K6_CLOUD_HOST_V6", &c.HostV6},
		{"K6_CLOUD_WEB_APP_URL", &c.WebAppURL}, {"K6_CLOUD_TEST_RUN_DETAILS", &c.TestRunDetails},
		{"K6_CLOUD_PUSH_REF_ID", &c.PushRefID}}
	for _, x := range strs {
		if v, ok := env[x.key]; ok {
			*x.dst = v
		}
	}
	ints := []struct {
		key string
		dst *int64
	}{{"K6_CLOUD_PROJECT_ID", &c.ProjectID}, {"K6_CLOUD_STACK_ID", &c.StackID}, {"K6_CLOUD_API_VERSION", &c.APIVersion},
		{"K6_CLOUD_MAX_TIME_SERIES_IN_BATCH", &c.MaxTimeSeriesInBatch}, {"K6_CLOUD_METRIC_PUSH_CONCURRENCY", &c.MetricPushConcurrency}}
	for _, x := range ints {
		if v, ok := env[x.key]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("environment: %s=%q: want an integer", x.key, v)
			}
			*x.dst = n
		}
	}
	bools := []struct {
		key string
		dst *bool
	}{{"K6_CLOUD_STOP_ON_ERROR", &c.StopOnError}, {"K6_CLOUD_NO_COMPRESS", new(bool)}}
	for _, x := range bools {
		if v, ok := env[x.key]; ok {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("environment: %s=%q: want true or false", x.key, v)
			}
			*x.dst = b
		}
	}
	durs := []struct {
		key string
		dst *time.Duration
	}{{"K6_CLOUD_TIMEOUT", &c.Timeout}, {"K6_CLOUD_METRIC_PUSH_INTERVAL", &c.MetricPushInterval},
		{"K6_CLOUD_AGGREGATION_PERIOD", &c.AggregationPeriod}, {"K6_CLOUD_AGGREGATION_WAIT_PERIOD", &c.AggregationWaitPeriod}}
	for _, x := range durs {
		if v, ok := env[x.key]; ok {
			var d duration
			if err := d.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("environment: %s: %w", x.key, err)
			}
			*x.dst = d.d
		}
	}
	return nil
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
