package opentelemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/credentials"
)

// newExporter builds the SDK's OTLP exporter for the configured protocol,
// with the options k6 v2.2 gives it (endpoint, URL path, insecure, headers,
// basic auth, TLS). The SDK itself reads the standard OTEL_EXPORTER_OTLP_*
// variables (compression, temporality preference, timeout) under them.
func newExporter(cfg Config) (sdkmetric.Exporter, error) {
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{}
	for k, v := range cfg.Headers {
		headers[k] = v
	}
	if cfg.HasBasicAuth {
		headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.HTTPUser+":"+cfg.HTTPPassword))
	}
	ctx := context.Background()
	if cfg.Protocol == ProtocolHTTP {
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(cfg.HTTPEndpoint), otlpmetrichttp.WithURLPath(cfg.HTTPURLPath)}
		if cfg.HTTPInsecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		if len(headers) > 0 {
			opts = append(opts, otlpmetrichttp.WithHeaders(headers))
		}
		if tlsCfg != nil {
			opts = append(opts, otlpmetrichttp.WithTLSClientConfig(tlsCfg))
		}
		return otlpmetrichttp.New(ctx, opts...)
	}
	opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(cfg.GRPCEndpoint)}
	if cfg.GRPCInsecure {
		opts = append(opts, otlpmetricgrpc.WithInsecure())
	}
	if len(headers) > 0 {
		opts = append(opts, otlpmetricgrpc.WithHeaders(headers))
	}
	if tlsCfg != nil {
		opts = append(opts, otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
	}
	return otlpmetricgrpc.New(ctx, opts...)
}

// tlsConfig is nil unless a TLS setting was given (then TLS 1.3 at least,
// as k6's).
func tlsConfig(cfg Config) (*tls.Config, error) {
	if cfg.TLSInsecureSkipVerify == nil && cfg.TLSCertificate == "" && cfg.TLSClientCertificate == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS13}
	if cfg.TLSInsecureSkipVerify != nil {
		t.InsecureSkipVerify = *cfg.TLSInsecureSkipVerify
	}
	if cfg.TLSCertificate != "" {
		b, err := os.ReadFile(cfg.TLSCertificate)
		if err != nil {
			return nil, fmt.Errorf("K6_OTEL_TLS_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("K6_OTEL_TLS_CERTIFICATE: %s holds no PEM certificate", cfg.TLSCertificate)
		}
		t.RootCAs = pool
	}
	if cfg.TLSClientCertificate != "" {
		c, err := tls.LoadX509KeyPair(cfg.TLSClientCertificate, cfg.TLSClientKey)
		if err != nil {
			return nil, fmt.Errorf("K6_OTEL_TLS_CLIENT_CERTIFICATE/K6_OTEL_TLS_CLIENT_KEY: %w", err)
		}
		t.Certificates = []tls.Certificate{c}
	}
	return t, nil
}

// countingExporter counts exports and keeps the last failure. It returns
// no error to the SDK, whose only use for one is the process-wide otel error
// handler (global state, and a line per period): a failing period is
// reported through onFail once, recovery through onRecover, and Stop reads
// whether the final export failed to log it as k6 does.
type countingExporter struct {
	sdkmetric.Exporter
	onFail    func(err error)
	onRecover func(failed int64)

	mu         sync.Mutex
	stopping   bool
	exports    int64
	failed     int64
	failing    bool
	lastFailed bool
	lastErr    error
}

func (e *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	e.mu.Lock()
	if err != nil && e.stopping && errors.Is(err, context.Canceled) {
		// A periodic export that Stop interrupted: the final export that
		// follows carries what it held.
		e.mu.Unlock()
		return nil
	}
	e.exports++
	first, recovered := false, false
	if err != nil {
		e.failed++
		e.lastErr = err
		first = !e.failing && !e.stopping
		e.failing = true
	} else {
		recovered = e.failing && !e.stopping
		e.failing = false
	}
	e.lastFailed = err != nil
	failed := e.failed
	e.mu.Unlock()
	if first {
		e.onFail(err)
	}
	if recovered {
		e.onRecover(failed)
	}
	return nil
}

// stop marks the exports from now on as the final one's.
func (e *countingExporter) stop() {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
}

// last is the final export's error (nil when it worked or never ran).
func (e *countingExporter) last() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lastFailed {
		return e.lastErr
	}
	return nil
}

func (e *countingExporter) counts() (exports, failed int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exports, e.failed
}
