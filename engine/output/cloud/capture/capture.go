// Package capture is a Grafana Cloud k6 stand-in on 127.0.0.1 for tests:
// it answers the test-run API as the cloud does, records every request,
// and decodes metric pushes (snappy, protobuf metrics protocol 2.0) with
// the protobuf library's dynamic messages (schema.go), independently of
// the output's encoder. It also decodes pushes captured from real k6.
package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// MetricSet is a decoded push, in protojson's field names.
type MetricSet struct {
	TestRunID         string   `json:"testRunId"`
	AggregationPeriod uint32   `json:"aggregationPeriod"`
	Metrics           []Metric `json:"metrics"`
}

// Metric is one metric of a push.
type Metric struct {
	Name       string       `json:"name"`
	Type       string       `json:"type"` // METRIC_TYPE_COUNTER, ...
	TimeSeries []TimeSeries `json:"timeSeries"`
}

// Label is one tag.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TimeSeries is one tag set's values.
type TimeSeries struct {
	Labels          []Label  `json:"labels"`
	CounterSamples  *Samples `json:"counterSamples"`
	GaugeSamples    *Samples `json:"gaugeSamples"`
	RateSamples     *Samples `json:"rateSamples"`
	TrendHdrSamples *Samples `json:"trendHdrSamples"`
}

// Samples are a series' values, one per aggregation period.
type Samples struct {
	Values []Value `json:"values"`
}

// Value is any of the value messages; fields absent on the wire are zero.
type Value struct {
	Time  string  `json:"time"` // RFC 3339
	Value float64 `json:"value"`
	// Gauge
	Last  float64 `json:"last"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Avg   float64 `json:"avg"`
	Count uint32  `json:"count"`
	// Rate
	NonzeroCount uint32 `json:"nonzeroCount"`
	TotalCount   uint32 `json:"totalCount"`
	// Trend
	Counters               []uint32 `json:"counters"`
	Spans                  []Span   `json:"spans"`
	Sum                    float64  `json:"sum"`
	MinValue               float64  `json:"minValue"`
	MaxValue               float64  `json:"maxValue"`
	ExtraLowValuesCounter  *uint32  `json:"extraLowValuesCounter"`
	ExtraHighValuesCounter *uint32  `json:"extraHighValuesCounter"`
	MinResolution          float64  `json:"minResolution"`
	SignificantDigits      *uint32  `json:"significantDigits"`
}

// Span is a run of buckets.
type Span struct {
	Offset uint32 `json:"offset"`
	Length uint32 `json:"length"`
}

// Decode reads a push body: snappy block, then MetricSet.
func Decode(body []byte) (MetricSet, error) {
	var ms MetricSet
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return ms, fmt.Errorf("snappy: %w", err)
	}
	desc, err := schema()
	if err != nil {
		return ms, err
	}
	msg := dynamicpb.NewMessage(desc)
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(raw, msg); err != nil {
		return ms, fmt.Errorf("protobuf: %w", err)
	}
	if len(msg.GetUnknown()) > 0 {
		return ms, errors.New("protobuf: unknown fields in MetricSet")
	}
	js, err := protojson.Marshal(msg)
	if err != nil {
		return ms, err
	}
	return ms, json.Unmarshal(js, &ms)
}

// Request is one request as it arrived.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	Set          *MetricSet // a decoded push
	Err          error      // a push that did not decode
}

// Server is the stand-in.
type Server struct {
	URL string
	// RefID is the reference_id given to created runs ("4242" by default);
	// Config is the "config" of the answer (JSON, "{}" when empty).
	RefID, Config string
	// LoadTestExists makes the v6 create answer 409 (the name is taken);
	// RunStatuses are the test run's statuses, one per read, the last one
	// staying ("initializing" when none: a local execution waits for it).
	LoadTestExists bool
	RunStatuses    []string
	// NoArchiveUpload answers a local execution's start without an upload
	// URL (k6 then warns and uploads nothing).
	NoArchiveUpload bool
	// RunResult is a remote run's result once completed: passed, failed
	// (thresholds) or error ("" is null).
	RunResult string

	mu       sync.Mutex
	reqs     []Request
	pushCode int
	pushBody string
	srv      *http.Server
	ln       net.Listener
}

// Start listens on 127.0.0.1.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), RefID: "4242", ln: ln}
	s.srv = &http.Server{Handler: s} //nolint:gosec // loopback, tests only
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// StartT starts a server for a test and closes it when the test ends.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// RefusePushes makes metric pushes answer code with body (0 restores 200).
func (s *Server) RefusePushes(code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushCode, s.pushBody = code, body
}

// Requests returns what arrived so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Pushes returns the decoded metric pushes.
func (s *Server) Pushes() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, "/v2/metrics/") {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	code, refusal := s.pushCode, s.pushBody
	s.mu.Unlock()
	if s.serveV6(w, r) {
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/tests":
		w.Header().Set("Content-Type", "application/json")
		cfg := s.Config
		if cfg == "" {
			cfg = "{}"
		}
		_, _ = fmt.Fprintf(w, `{"reference_id":%q,"config":%s}`, s.RefID, cfg)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v2/metrics/"):
		set, err := Decode(body)
		req.Set, req.Err = &set, err
		if err != nil {
			req.Set = nil
		}
		if code != 0 {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, refusal)
		}
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/tests/"):
	default:
		http.NotFound(w, r)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
}
