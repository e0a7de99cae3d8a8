package extension_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/js"
)

// BenchmarkScenarioVUInit is one more VU of scenarios/local-smoke.js (buzz.load,
// `export const options = sc.options()` with its thresholds) after the
// consolidation, as the runner makes them: the init's CPU and the heap each
// VU keeps (issue 16: sc.options() was ~0.8 ms and the options ~22 KB per VU).
func BenchmarkScenarioVUInit(b *testing.B) {
	reg := jshost.NewRegistry()
	mod := extension.New(extension.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err := reg.Register(extension.ImportPath, mod); err != nil {
		b.Fatal(err)
	}
	defer mod.Close()
	bundle, err := jshost.NewBundle(context.Background(), jshost.Config{Filename: "../scenarios/local-smoke.js",
		Registry: reg, Helpers: js.FS, Env: map[string]string{}})
	if err != nil {
		b.Fatal(err)
	}
	// The script's options stand for the consolidated ones: every key is
	// set on each VU's export, as after a real consolidation.
	if err := bundle.SetMergedOptions(bundle.Options); err != nil {
		b.Fatal(err)
	}
	vus := make([]*jshost.VU, 0, b.N)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		vu, err := bundle.NewVU(context.Background(), uint64(i+1), uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		vus = append(vus, vu)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/VU")
	runtime.KeepAlive(vus)
}
