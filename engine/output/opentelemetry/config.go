package opentelemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
)

// The two exporter protocols k6 v2.2 offers.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Config is the output's settings, with k6 v2.2's defaults
// (internal/output/opentelemetry/config.go of k6 v2.2.0, read and observed).
type Config struct {
	ServiceName    string        // K6_OTEL_SERVICE_NAME, else OTEL_SERVICE_NAME, else "k6"
	ServiceVersion string        // K6_OTEL_SERVICE_VERSION, else the runner's version
	MetricPrefix   string        // K6_OTEL_METRIC_PREFIX, prepended to every name
	FlushInterval  time.Duration // K6_OTEL_FLUSH_INTERVAL: samples into instruments (1 s)
	ExportInterval time.Duration // K6_OTEL_EXPORT_INTERVAL: instruments to the backend (10 s)
	Protocol       string        // K6_OTEL_EXPORTER_PROTOCOL: grpc (default) or http/protobuf

	// Headers are sent with every export (K6_OTEL_HEADERS, "k1=v1,k2=v2"
	// with URL-escaped keys and values); basic auth adds Authorization.
	Headers map[string]string
	// HTTPUser and HTTPPassword are basic auth (K6_OTEL_HTTP_EXPORTER_USERNAME
	// and _PASSWORD); k6 sends it for either protocol once a user is set.
	HTTPUser, HTTPPassword string
	HasBasicAuth           bool

	TLSInsecureSkipVerify      *bool  // K6_OTEL_TLS_INSECURE_SKIP_VERIFY (nil: not set)
	TLSCertificate             string // K6_OTEL_TLS_CERTIFICATE: root CAs (PEM)
	TLSClientCertificate       string // K6_OTEL_TLS_CLIENT_CERTIFICATE (PEM)
	TLSClientKey               string // K6_OTEL_TLS_CLIENT_KEY (PEM)
	HTTPInsecure, GRPCInsecure bool   // K6_OTEL_{HTTP,GRPC}_EXPORTER_INSECURE: plain text
	HTTPEndpoint               string // K6_OTEL_HTTP_EXPORTER_ENDPOINT: host:port (localhost:4318)
	HTTPURLPath                string // K6_OTEL_HTTP_EXPORTER_URL_PATH (/v1/metrics)
	GRPCEndpoint               string // K6_OTEL_GRPC_EXPORTER_ENDPOINT: host:port (localhost:4317)
}

// ConfigError is a setting the output cannot run with: the run is refused
// before it starts (exit 104).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ParseConfig reads the output's settings from the environment (the
// K6_OTEL_* variables and OTEL_SERVICE_NAME, as k6 v2.2 reads them) and
// checks them. version is the runner's, the default service version.
func ParseConfig(env map[string]string, version string) (Config, error) {
	cfg := Config{
		ServiceName: "k6", ServiceVersion: version, Protocol: ProtocolGRPC,
		FlushInterval: time.Second, ExportInterval: 10 * time.Second,
		HTTPEndpoint: "localhost:4318", HTTPURLPath: "/v1/metrics", GRPCEndpoint: "localhost:4317",
	}
	if v, ok := env["OTEL_SERVICE_NAME"]; ok {
		cfg.ServiceName = v
	}
	p := parser{env: env}
	p.str("K6_OTEL_SERVICE_NAME", &cfg.ServiceName)
	p.str("K6_OTEL_SERVICE_VERSION", &cfg.ServiceVersion)
	p.str("K6_OTEL_METRIC_PREFIX", &cfg.MetricPrefix)
	p.duration("K6_OTEL_FLUSH_INTERVAL", &cfg.FlushInterval)
	p.duration("K6_OTEL_EXPORT_INTERVAL", &cfg.ExportInterval)
	p.str("K6_OTEL_EXPORTER_PROTOCOL", &cfg.Protocol)
	if v, ok := env["K6_OTEL_HEADERS"]; ok && v != "" {
		h, err := parseHeaders(v)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("K6_OTEL_HEADERS: %w", err)
		}
		cfg.Headers = h
	}
	if v, ok := env["K6_OTEL_HTTP_EXPORTER_USERNAME"]; ok {
		cfg.HTTPUser, cfg.HasBasicAuth = v, true
	}
	p.str("K6_OTEL_HTTP_EXPORTER_PASSWORD", &cfg.HTTPPassword)
	if env["K6_OTEL_TLS_INSECURE_SKIP_VERIFY"] != "" {
		var b bool
		p.boolean("K6_OTEL_TLS_INSECURE_SKIP_VERIFY", &b)
		cfg.TLSInsecureSkipVerify = &b
	}
	p.str("K6_OTEL_TLS_CERTIFICATE", &cfg.TLSCertificate)
	p.str("K6_OTEL_TLS_CLIENT_CERTIFICATE", &cfg.TLSClientCertificate)
	p.str("K6_OTEL_TLS_CLIENT_KEY", &cfg.TLSClientKey)
	p.boolean("K6_OTEL_HTTP_EXPORTER_INSECURE", &cfg.HTTPInsecure)
	p.str("K6_OTEL_HTTP_EXPORTER_ENDPOINT", &cfg.HTTPEndpoint)
	p.str("K6_OTEL_HTTP_EXPORTER_URL_PATH", &cfg.HTTPURLPath)
	p.str("K6_OTEL_GRPC_EXPORTER_ENDPOINT", &cfg.GRPCEndpoint)
	p.boolean("K6_OTEL_GRPC_EXPORTER_INSECURE", &cfg.GRPCInsecure)
	if p.err != nil {
		return Config{}, &ConfigError{p.err}
	}
	if err := cfg.validate(); err != nil {
		return Config{}, &ConfigError{fmt.Errorf("error validating OpenTelemetry output config: %w", err)}
	}
	return cfg, nil
}

// validate applies k6 v2.2's checks (with its texts), then ours: intervals
// must be positive (k6 fails a zero flush interval only at start, and takes a
// zero export interval as the SDK's 60 s).
func (cfg Config) validate() error {
	switch {
	case cfg.ServiceName == "":
		return errors.New("providing service name is required")
	case cfg.ServiceVersion == "":
		return errors.New("providing service version is required")
	case cfg.Protocol != ProtocolGRPC && cfg.Protocol != ProtocolHTTP:
		return fmt.Errorf("unsupported exporter protocol %q, only %q and %q are supported", cfg.Protocol, ProtocolGRPC, ProtocolHTTP)
	case cfg.Protocol == ProtocolGRPC && cfg.GRPCEndpoint == "":
		return errors.New("gRPC exporter endpoint is required")
	case cfg.Protocol == ProtocolHTTP && cfg.HTTPEndpoint == "":
		return errors.New("HTTP exporter endpoint is required")
	case cfg.Protocol == ProtocolHTTP && (strings.HasPrefix(cfg.HTTPEndpoint, "http://") || strings.HasPrefix(cfg.HTTPEndpoint, "https://")):
		return errors.New("HTTP exporter endpoint must only be host and port, no scheme")
	case cfg.FlushInterval <= 0:
		return fmt.Errorf("K6_OTEL_FLUSH_INTERVAL must be positive, got %s", cfg.FlushInterval)
	case cfg.ExportInterval <= 0:
		return fmt.Errorf("K6_OTEL_EXPORT_INTERVAL must be positive, got %s", cfg.ExportInterval)
	case cfg.TLSClientCertificate != "" && cfg.TLSClientKey == "", cfg.TLSClientKey != "" && cfg.TLSClientCertificate == "":
		return errors.New("K6_OTEL_TLS_CLIENT_CERTIFICATE and K6_OTEL_TLS_CLIENT_KEY go together")
	}
	return nil
}

// String is the banner's description, as k6 prints it: "grpc, host:port",
// "grpc (insecure), host:port" or "http/protobuf, http(s)://host:port/path".
func (cfg Config) String() string {
	if cfg.Protocol == ProtocolHTTP {
		scheme := "https"
		if cfg.HTTPInsecure {
			scheme = "http"
		}
		return fmt.Sprintf("%s, %s://%s%s", cfg.Protocol, scheme, cfg.HTTPEndpoint, cfg.HTTPURLPath)
	}
	p := cfg.Protocol
	if cfg.GRPCInsecure {
		p += " (insecure)"
	}
	return p + ", " + cfg.GRPCEndpoint
}

// parseHeaders reads "k1=v1,k2=v2" with URL-escaped keys and values.
func parseHeaders(raw string) (map[string]string, error) {
	h := map[string]string{}
	for i, kv := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			// k6 prints the item; it may be a token, so only its place.
			return nil, fmt.Errorf("invalid header number %d (not shown: it may hold a secret), expected format key=value", i+1)
		}
		uk, err := url.PathUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("header key %q: %w", k, err)
		}
		uv, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("header %q: the value is not URL-escaped correctly", uk)
		}
		h[uk] = uv
	}
	return h, nil
}

// parser reads typed settings and keeps the first error, naming its key.
type parser struct {
	env map[string]string
	err error
}

func (p *parser) str(key string, dst *string) {
	if v, ok := p.env[key]; ok {
		*dst = v
	}
}

// duration takes k6's extended durations ("10s", "1m30s", "1d", or a number
// of milliseconds). An empty value leaves the default, as k6 does.
func (p *parser) duration(key string, dst *time.Duration) {
	v, ok := p.env[key]
	if !ok || v == "" || p.err != nil {
		return
	}
	d, err := executor.ParseDuration(v)
	if err != nil {
		p.err = fmt.Errorf("%s=%q: want a duration such as 10s", key, v)
		return
	}
	*dst = d
}

// boolean takes "true" or "false", the only words k6's null.Bool reads.
func (p *parser) boolean(key string, dst *bool) {
	v, ok := p.env[key]
	if !ok || v == "" || p.err != nil {
		return
	}
	switch v {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		p.err = fmt.Errorf("%s=%q: want true or false", key, v)
	}
}
