package prometheusrw

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Defaults of k6's output (docs/k6-compat.md §7.3; the output's documentation,
// results-output/real-time/prometheus-remote-write.md).
const (
	DefaultServerURL    = "http://localhost:9090/api/v1/write"
	DefaultPushInterval = 5 * time.Second
	DefaultTimeout      = 5 * time.Second
	// DefaultSchema is the native-histogram schema: 2^8 buckets per power of
	// two, a bucket factor of 2^(1/256) ≈ 1.0027, so a quantile Prometheus
	// computes is within 0.3 % of the exact one — as fine as the HDR sinks'
	// 2 significant digits (0.4 %), which is what lets dashboards over
	// several runners agree with `buzzload merge`. k6 uses a factor of 1.1 (schema 3); set
	// BUZZLOAD_PROMETHEUS_RW_HISTOGRAM_SCHEMA=3 for its resolution and ~30x
	// fewer buckets (receivers such as Grafana Cloud cap buckets per sample).
	DefaultSchema = 8
	// DefaultMaxSeries bounds the output's memory: samples of new series past
	// it are dropped and counted (k6 warns at 100k series).
	DefaultMaxSeries = 100_000
)

// env keys.
const (
	envPrefix       = "K6_PROMETHEUS_RW_"
	envServerURL    = envPrefix + "SERVER_URL"
	envPushInterval = envPrefix + "PUSH_INTERVAL"
	envTrendStats   = envPrefix + "TREND_STATS"
	envNative       = envPrefix + "TREND_AS_NATIVE_HISTOGRAM"
	envHeaders      = envPrefix + "HEADERS_"
	envHTTPHeaders  = envPrefix + "HTTP_HEADERS"
	envUsername     = envPrefix + "USERNAME"
	envPassword     = envPrefix + "PASSWORD"
	envBearer       = envPrefix + "BEARER_TOKEN"
	envInsecure     = envPrefix + "INSECURE_SKIP_TLS_VERIFY"
	envTLSMin       = envPrefix + "TLS_MINIMUM_VERSION"
	envStale        = envPrefix + "STALE_MARKERS"
	envClientCert   = envPrefix + "CLIENT_CERTIFICATE"
	envClientKey    = envPrefix + "CLIENT_CERTIFICATE_KEY"
	envSigV4        = envPrefix + "SIGV4_"
	envSchema       = "BUZZLOAD_PROMETHEUS_RW_HISTOGRAM_SCHEMA"
	envMaxSeries    = "BUZZLOAD_PROMETHEUS_RW_MAX_SERIES"
)

// Config is the output's settings.
type Config struct {
	ServerURL    string
	PushInterval time.Duration
	// Timeout bounds one push (k6: 5 s).
	Timeout time.Duration
	// TrendStats are the per-stat series of a Trend when it is not a native
	// histogram, in the order given.
	TrendStats []TrendStat
	// NativeHistograms maps Trends to one native histogram series each.
	NativeHistograms bool
	// Schema is the native histograms' schema (-4..8).
	Schema int32
	// Headers are sent with every push (K6_PROMETHEUS_RW_HEADERS_<NAME> and
	// K6_PROMETHEUS_RW_HTTP_HEADERS).
	Headers  map[string]string
	Username string
	Password string
	// HasBasicAuth is set when a user name was given (k6 sends basic auth
	// then, even with an empty password).
	HasBasicAuth bool
	BearerToken  string
	// InsecureSkipTLSVerify and TLSMinVersion configure HTTPS endpoints.
	InsecureSkipTLSVerify bool
	TLSMinVersion         uint16
	ClientCert, ClientKey string
	// StaleMarkers marks every series stale at the end of the run.
	StaleMarkers bool
	// MaxSeries bounds how many series the output keeps.
	MaxSeries int
}

// TrendStat is one configured Trend stat and the suffix of its series.
type TrendStat struct {
	Name   string // as written: p(99), avg, sum
	Suffix string // p99, avg, sum
	stat   metrics.Stat
	sum    bool
}

// ParseTrendStat reads count, sum, min, max, avg, med or p(N). The suffix of
// p(N) is p followed by N without its dot: p(99) is p99, p(99.9) p999.
func ParseTrendStat(s string) (TrendStat, error) {
	if s == "sum" {
		return TrendStat{Name: s, Suffix: s, sum: true}, nil
	}
	st, err := metrics.ParseStat(s)
	if err != nil || st.Kind == metrics.StatRate || st.Kind == metrics.StatValue {
		return TrendStat{}, fmt.Errorf("trend stat %q: want count, sum, min, max, avg, med or p(N)", s)
	}
	suffix := s
	if st.Kind == metrics.StatPercentile {
		suffix = "p" + strings.ReplaceAll(s[2:len(s)-1], ".", "")
	}
	return TrendStat{Name: s, Suffix: suffix, stat: st}, nil
}

// value reads the stat from a sink, in the metric's own unit.
func (ts TrendStat) value(t *metrics.TrendSink) float64 {
	if ts.sum {
		return t.Sum()
	}
	v, _ := t.Value(ts.stat, 0)
	return v
}

// ParseConfig reads the K6_PROMETHEUS_RW_* settings from env over k6's
// defaults. An invalid value is an error naming its variable. The output
// takes no argument (k6 ignores one; we refuse it so that a typo is seen).
func ParseConfig(arg string, env map[string]string) (Config, error) {
	if arg != "" {
		return Config{}, fmt.Errorf("experimental-prometheus-rw takes no argument (got %q); configure it with the K6_PROMETHEUS_RW_* environment variables", arg)
	}
	cfg := Config{ServerURL: DefaultServerURL, PushInterval: DefaultPushInterval, Timeout: DefaultTimeout,
		Schema: DefaultSchema, Headers: map[string]string{}, TLSMinVersion: tls.VersionTLS13, MaxSeries: DefaultMaxSeries}
	def, _ := ParseTrendStat("p(99)")
	cfg.TrendStats = []TrendStat{def}

	boolean := func(key string, dst *bool) error {
		v, ok := env[key]
		if !ok {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", key, v)
		}
		*dst = b
		return nil
	}
	if v, ok := env[envServerURL]; ok {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, fmt.Errorf("%s: want an http:// or https:// URL, got %q", envServerURL, redactURL(v))
		}
		cfg.ServerURL = v
	}
	if v, ok := env[envPushInterval]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive duration such as 5s", envPushInterval, v)
		}
		cfg.PushInterval = d
	}
	if v, ok := env[envTrendStats]; ok {
		cfg.TrendStats = nil
		seen := map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			ts, err := ParseTrendStat(strings.TrimSpace(s))
			if err != nil {
				return Config{}, fmt.Errorf("%s: %w", envTrendStats, err)
			}
			if !seen[ts.Suffix] {
				seen[ts.Suffix] = true
				cfg.TrendStats = append(cfg.TrendStats, ts)
			}
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{envNative, &cfg.NativeHistograms}, {envInsecure, &cfg.InsecureSkipTLSVerify}, {envStale, &cfg.StaleMarkers}} {
		if err := boolean(b.key, b.dst); err != nil {
			return Config{}, err
		}
	}
	if v, ok := env[envUsername]; ok {
		cfg.Username, cfg.HasBasicAuth = v, true
	}
	cfg.Password = env[envPassword]
	cfg.BearerToken = env[envBearer]
	if cfg.HasBasicAuth && cfg.BearerToken != "" {
		return Config{}, fmt.Errorf("%s and %s cannot both be set", envUsername, envBearer)
	}
	if v, ok := env[envHTTPHeaders]; ok && v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return Config{}, fmt.Errorf("%s: %q is not name:value", envHTTPHeaders, strings.TrimSpace(k))
			}
			cfg.Headers[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	for k, v := range env {
		if name, ok := strings.CutPrefix(k, envHeaders); ok && name != "" {
			cfg.Headers[name] = v
		}
	}
	if v, ok := env[envTLSMin]; ok {
		switch v {
		case "1.2":
			cfg.TLSMinVersion = tls.VersionTLS12
		case "1.3":
			cfg.TLSMinVersion = tls.VersionTLS13
		default:
			return Config{}, fmt.Errorf("%s=%q: want 1.2 or 1.3", envTLSMin, v)
		}
	}
	cfg.ClientCert, cfg.ClientKey = env[envClientCert], env[envClientKey]
	if (cfg.ClientCert == "") != (cfg.ClientKey == "") {
		return Config{}, fmt.Errorf("%s and %s must be set together", envClientCert, envClientKey)
	}
	var sig []string
	for k := range env {
		if strings.HasPrefix(k, envSigV4) {
			sig = append(sig, k)
		}
	}
	if len(sig) > 0 {
		sort.Strings(sig)
		return Config{}, fmt.Errorf("%s: SigV4 signing is not supported by buzzload", sig[0])
	}
	if v, ok := env[envSchema]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < -4 || n > 8 {
			return Config{}, fmt.Errorf("%s=%q: want an integer from -4 to 8", envSchema, v)
		}
		cfg.Schema = int32(n)
	}
	if v, ok := env[envMaxSeries]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive integer", envMaxSeries, v)
		}
		cfg.MaxSeries = n
	}
	return cfg, nil
}

// redactURL hides a password in a URL's user info (secrets stay out of
// messages).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
