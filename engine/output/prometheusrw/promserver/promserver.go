// Package promserver starts a real Prometheus (Debian's `prometheus`) for
// tests: on loopback, on a free port, with the remote-write receiver and
// native histograms enabled, storing into a temporary directory that the
// test removes. It is the real part users write into, never a fake.
//
// Without the binary a test fails under CI=true or
// BUZZLOAD_REQUIRE_PROMETHEUS=1 (.ci/run installs it) and is skipped
// otherwise.
package promserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running Prometheus.
type Server struct {
	Addr string // host:port
	cmd  *exec.Cmd
	log  *lockedBuffer
	once sync.Once
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts Prometheus and waits until it is ready; the test's cleanup
// stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("BUZZLOAD_REQUIRE_PROMETHEUS") == "1" {
			t.Fatalf("prometheus is not installed (apt-get install prometheus; .ci/run does): %v", err)
		}
		t.Skip("prometheus is not installed; set BUZZLOAD_REQUIRE_PROMETHEUS=1 to make this a failure")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	// No scrape jobs: everything arrives through remote write.
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), log: &lockedBuffer{}, done: make(chan struct{})}
		s.cmd = exec.Command(bin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(dir, "data"+strconv.Itoa(attempt)),
			"--web.listen-address="+s.Addr,
			"--web.enable-remote-write-receiver",
			"--enable-feature=native-histograms",
			"--storage.tsdb.retention.time=1d",
			"--log.level=warn")
		s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start prometheus: %v", err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if err := s.waitReady(20 * time.Second); err != nil {
			s.Kill()
			last = err
			continue
		}
		t.Cleanup(s.Kill)
		return s
	}
	t.Fatalf("prometheus did not become ready: %v", last)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("prometheus exited: %s", s.log.String())
		default:
		}
		resp, err := http.Get("http://" + s.Addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %s", limit, s.log.String())
}

// WriteURL is the remote-write endpoint.
func (s *Server) WriteURL() string { return "http://" + s.Addr + "/api/v1/write" }

// Log is what Prometheus printed (warnings and errors).
func (s *Server) Log() string { return s.log.String() }

// Kill stops Prometheus at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		<-s.done
	})
}

// Sample is one element of an instant vector: labels and a float value, or a
// native histogram's count and sum.
type Sample struct {
	Metric    map[string]string
	Value     float64
	Histogram bool
}

// Query runs an instant PromQL query at t and returns the vector (a scalar
// comes back as one sample without labels).
func (s *Server) Query(ctx context.Context, expr string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %s: HTTP %d: %s", expr, resp.StatusCode, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, r.Error)
	}
	switch r.Data.ResultType {
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		f, err := parseValue(v[1])
		return []Sample{{Value: f}}, err
	case "vector":
		var vec []struct {
			Metric    map[string]string  `json:"metric"`
			Value     [2]any             `json:"value"`
			Histogram [2]json.RawMessage `json:"histogram"`
		}
		if err := json.Unmarshal(r.Data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(vec))
		for _, e := range vec {
			if e.Value[1] == nil && e.Histogram[1] != nil {
				var h struct {
					Count string `json:"count"`
				}
				if err := json.Unmarshal(e.Histogram[1], &h); err != nil {
					return nil, err
				}
				c, _ := strconv.ParseFloat(h.Count, 64)
				out = append(out, Sample{Metric: e.Metric, Value: c, Histogram: true})
				continue
			}
			f, err := parseValue(e.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Metric: e.Metric, Value: f})
		}
		return out, nil
	}
	return nil, fmt.Errorf("query %s: result type %s", expr, r.Data.ResultType)
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}
