package js

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/buzzload/buzzload/engine/js/modules"
)

// memMetrics records every sample for assertions.
type memMetrics struct {
	mu      sync.Mutex
	defs    map[string]*modules.Metric
	samples []modules.Sample
}

func newMemMetrics() *memMetrics { return &memMetrics{defs: map[string]*modules.Metric{}} }

func (m *memMetrics) Define(name string, t modules.MetricType, c modules.ValueType) (*modules.Metric, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.defs[name]; ok {
		if d.Type != t || d.Contains != c {
			return nil, errMetricClash(name)
		}
		return d, nil
	}
	d := &modules.Metric{Name: name, Type: t, Contains: c, ID: len(m.defs)}
	m.defs[name] = d
	return d, nil
}

type errMetricClash string

func (e errMetricClash) Error() string { return "metric " + string(e) + " redefined with another type" }

func (m *memMetrics) Push(s ...modules.Sample) {
	m.mu.Lock()
	m.samples = append(m.samples, s...)
	m.mu.Unlock()
}

func (m *memMetrics) of(name string) []modules.Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []modules.Sample
	for _, s := range m.samples {
		if s.Metric.Name == name {
			out = append(out, s)
		}
	}
	return out
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	dir     string
	metrics *memMetrics
	log     *syncBuf
	control *StandaloneControl
}

// writeFiles writes name→content into a temp dir and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newHarness(t *testing.T, files map[string]string) *harness {
	return &harness{dir: writeFiles(t, files), metrics: newMemMetrics(), log: &syncBuf{}, control: &StandaloneControl{}}
}

func (h *harness) config(main string) Config {
	return Config{
		Filename: filepath.Join(h.dir, main),
		Env:      map[string]string{"FROM_ENV": "yes"},
		Logger:   NewLogger(h.log, LevelDebug),
		Metrics:  h.metrics,
		Control:  h.control,
		Helpers:  fstest.MapFS{"greet.js": {Data: []byte(`export function greet(n) { return "hi " + n }`)}},
	}
}

func (h *harness) bundle(t *testing.T, main string) *Bundle {
	t.Helper()
	b, err := NewBundle(context.Background(), h.config(main))
	if err != nil {
		t.Fatalf("NewBundle: %v", err)
	}
	return b
}

func (h *harness) vu(t *testing.T, b *Bundle, id uint64) *VU {
	t.Helper()
	vu, err := b.NewVU(context.Background(), id, id)
	if err != nil {
		t.Fatalf("NewVU: %v", err)
	}
	t.Cleanup(vu.Close)
	return vu
}
