// Package otlptest is a loopback OTLP metrics receiver for tests, over gRPC
// and http/protobuf, decoding what arrives with the official OTLP
// definitions (go.opentelemetry.io/proto/otlp), and a normal form of an
// export for comparing one sender with another (buzzload with real k6).
package otlptest

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Export is one request as received.
type Export struct {
	Headers map[string]string // lower-case names (HTTP headers or gRPC metadata)
	Path    string            // the HTTP path ("" for gRPC)
	Request *colmetric.ExportMetricsServiceRequest
}

// Receiver collects exports on 127.0.0.1.
type Receiver struct {
	Addr string // host:port

	mu      sync.Mutex
	exports []Export
	fail    bool
	closeFn func()
	seen    chan struct{}
}

// Fail makes the receiver answer every export with an error (HTTP 500 or
// gRPC Internal) after recording it.
func (r *Receiver) Fail(f bool) { r.mu.Lock(); r.fail = f; r.mu.Unlock() }

// Exports are the exports received so far.
func (r *Receiver) Exports() []Export {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Export(nil), r.exports...)
}

// Seen is signalled (without blocking) on every export.
func (r *Receiver) Seen() <-chan struct{} { return r.seen }

// Close stops the server.
func (r *Receiver) Close() { r.closeFn() }

func (r *Receiver) add(e Export) bool {
	r.mu.Lock()
	r.exports = append(r.exports, e)
	fail := r.fail
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
	return fail
}

// StartHTTP starts an OTLP/HTTP (protobuf) receiver on 127.0.0.1.
func StartHTTP() (*Receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{Addr: l.Addr().String(), seen: make(chan struct{}, 1)}
	srv := &http.Server{Handler: r.httpHandler()}
	go func() { _ = srv.Serve(l) }()
	r.closeFn = func() { _ = srv.Close() }
	return r, nil
}

// StartHTTPS starts an OTLP/HTTP receiver over TLS on 127.0.0.1 with a
// throwaway certificate for 127.0.0.1, returned as PEM (the root a client
// must trust).
func StartHTTPS() (*Receiver, []byte, error) {
	r := &Receiver{seen: make(chan struct{}, 1)}
	srv := httptest.NewUnstartedServer(r.httpHandler())
	srv.StartTLS()
	r.Addr = srv.Listener.Addr().String()
	r.closeFn = srv.Close
	return r, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), nil
}

func (r *Receiver) httpHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var m colmetric.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, "not an OTLP metrics request: "+err.Error(), 400)
			return
		}
		h := map[string]string{}
		for k, v := range req.Header {
			h[strings.ToLower(k)] = strings.Join(v, ",")
		}
		if r.add(Export{Headers: h, Path: req.URL.Path, Request: &m}) {
			http.Error(w, "receiver told to fail", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetric.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	})
}

type grpcService struct {
	colmetric.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s grpcService) Export(ctx context.Context, m *colmetric.ExportMetricsServiceRequest) (*colmetric.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := map[string]string{}
	for k, v := range md {
		h[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if s.r.add(Export{Headers: h, Request: m}) {
		return nil, status.Error(codes.Internal, "receiver told to fail")
	}
	return &colmetric.ExportMetricsServiceResponse{}, nil
}

// StartGRPC starts an OTLP/gRPC receiver (plain text) on 127.0.0.1.
func StartGRPC() (*Receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{Addr: l.Addr().String(), seen: make(chan struct{}, 1)}
	g := grpc.NewServer()
	colmetric.RegisterMetricsServiceServer(g, grpcService{r: r})
	go func() { _ = g.Serve(l) }()
	r.closeFn = g.Stop
	return r, nil
}

// Decode reads an ExportMetricsServiceRequest from its protobuf bytes.
func Decode(b []byte) (*colmetric.ExportMetricsServiceRequest, error) {
	var m colmetric.ExportMetricsServiceRequest
	return &m, proto.Unmarshal(b, &m)
}

// Lines is a normal form of an export, one line per data point, sorted:
// metric name, kind, unit, temporality, sorted attributes and the values
// (timestamps left out). values=false leaves the values out too, for
// metrics whose values differ from run to run (durations, bytes). Sums are
// written to 9 significant digits: samples of several VUs arrive in any
// order, and floating-point addition in another order differs in the last
// bits (k6's own exports do too).
func Lines(m *colmetric.ExportMetricsServiceRequest, values func(name string) bool) []string {
	var out []string
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, met := range sm.Metrics {
				out = append(out, metricLines(met, values(met.Name))...)
			}
		}
	}
	sort.Strings(out)
	return out
}

func metricLines(met *metricpb.Metric, withValues bool) []string {
	head := met.Name + " unit=" + met.Unit
	var out []string
	switch d := met.Data.(type) {
	case *metricpb.Metric_Sum:
		head += fmt.Sprintf(" sum %s monotonic=%v", d.Sum.AggregationTemporality, d.Sum.IsMonotonic)
		for _, p := range d.Sum.DataPoints {
			out = append(out, head+" "+attrs(p.Attributes)+numValue(p, withValues))
		}
	case *metricpb.Metric_Gauge:
		head += " gauge"
		for _, p := range d.Gauge.DataPoints {
			out = append(out, head+" "+attrs(p.Attributes)+numValue(p, withValues))
		}
	case *metricpb.Metric_Histogram:
		head += " histogram " + d.Histogram.AggregationTemporality.String()
		for _, p := range d.Histogram.DataPoints {
			line := head + " " + attrs(p.Attributes) + fmt.Sprintf(" bounds=%v", p.ExplicitBounds)
			if withValues {
				line += fmt.Sprintf(" count=%d sum=%.9g min=%g max=%g buckets=%v", p.Count, p.GetSum(), p.GetMin(), p.GetMax(), p.BucketCounts)
			}
			out = append(out, line)
		}
	default:
		out = append(out, fmt.Sprintf("%s %T", head, met.Data))
	}
	return out
}

func numValue(p *metricpb.NumberDataPoint, with bool) string {
	if !with {
		return ""
	}
	switch v := p.Value.(type) {
	case *metricpb.NumberDataPoint_AsInt:
		return fmt.Sprintf(" int=%d", v.AsInt)
	case *metricpb.NumberDataPoint_AsDouble:
		return fmt.Sprintf(" double=%.9g", v.AsDouble)
	}
	return " none"
}

func attrs(kvs []*commonpb.KeyValue) string {
	s := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		s = append(s, kv.Key+"="+kv.Value.GetStringValue())
	}
	sort.Strings(s)
	return "{" + strings.Join(s, ",") + "}"
}

// Resource is the export's resource attributes and scope names.
func Resource(m *colmetric.ExportMetricsServiceRequest) (attrs map[string]string, scopes []string) {
	attrs = map[string]string{}
	for _, rm := range m.ResourceMetrics {
		for _, kv := range rm.Resource.GetAttributes() {
			attrs[kv.Key] = kv.Value.GetStringValue()
		}
		for _, sm := range rm.ScopeMetrics {
			scopes = append(scopes, sm.Scope.GetName())
		}
	}
	return attrs, scopes
}

// PromSeriesNames are the Prometheus metric names an OTLP receiver
// (Prometheus's own since 2.47, or a collector's prometheus exporters) gives the
// export's metrics under its default translation, "UnderscoreEscapingWith
// Suffixes" (prometheus/otlptranslator): characters outside [a-zA-Z0-9_:]
// become "_", the unit is a suffix word (ms → milliseconds, By → bytes, s →
// seconds), monotonic sums end in "_total", and a histogram is its
// _bucket, _sum and _count series.
func PromSeriesNames(m *colmetric.ExportMetricsServiceRequest) map[string]bool {
	out := map[string]bool{}
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, met := range sm.Metrics {
				words := strings.FieldsFunc(met.Name, func(r rune) bool {
					return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':')
				})
				unit := map[string]string{"ms": "milliseconds", "By": "bytes", "s": "seconds"}[met.Unit]
				if unit != "" && !slicesContains(words, unit) {
					words = append(words, unit)
				}
				switch d := met.Data.(type) {
				case *metricpb.Metric_Sum:
					if d.Sum.IsMonotonic {
						words = append(slicesDelete(words, "total"), "total")
					}
					out[strings.Join(words, "_")] = true
				case *metricpb.Metric_Histogram:
					base := strings.Join(words, "_")
					out[base+"_bucket"], out[base+"_sum"], out[base+"_count"] = true, true, true
				default:
					out[strings.Join(words, "_")] = true
				}
			}
		}
	}
	return out
}

func slicesContains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

func slicesDelete(s []string, w string) []string {
	out := s[:0:0]
	for _, x := range s {
		if x != w {
			out = append(out, x)
		}
	}
	return out
}
