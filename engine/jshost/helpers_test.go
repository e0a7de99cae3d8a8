package jshost

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/buzzload/buzzload/engine/metrics"
)

// memMetrics records every sample the collector ingests.
type memMetrics struct {
	c       *metrics.Collector
	mu      sync.Mutex
	samples []metrics.Sample
}

func newMemMetrics() *memMetrics {
	m := &memMetrics{c: metrics.NewCollector(metrics.NewRegistry(), metrics.CollectorOptions{})}
	m.c.AddConsumer(m)
	return m
}

func (m *memMetrics) AddSamples(s []metrics.Sample) {
	m.mu.Lock()
	m.samples = append(m.samples, s...)
	m.mu.Unlock()
}

// of flushes and returns the samples of one metric.
func (m *memMetrics) of(name string) []metrics.Sample {
	m.c.Flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []metrics.Sample
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
func writeFiles(t *testing.T, files map[string]string) string { return writeFilesB(t, files) }

func writeFilesB(t testing.TB, files map[string]string) string {
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
		Filename:  filepath.Join(h.dir, main),
		Env:       map[string]string{"FROM_ENV": "yes"},
		Logger:    NewLogger(h.log, LevelDebug),
		Collector: h.metrics.c,
		Control:   h.control,
		Helpers:   fstest.MapFS{"greet.js": {Data: []byte(`export function greet(n) { return "hi " + n }`)}},
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
