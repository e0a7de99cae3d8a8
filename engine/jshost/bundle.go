// Package jshost is the script host of the k6-compatible runner: it compiles a
// script once (ES modules with a CommonJS fallback), gives every VU its own
// sobek runtime and event loop, and runs the lifecycle functions (init,
// setup, iterations, teardown, handleSummary) the way k6 does.
//
// Go modules come from a jsmodule.Registry; the built-in `k6`, `k6/metrics`,
// `k6/execution`, `k6/timers` and `k6/data` (SharedArray) are added by
// NewRegistry. JS helpers embedded in the binary are imported as
// "buzzload/<file>".
package jshost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/lazyjson"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Config is what a Bundle needs.
type Config struct {
	// Filename is the script path; Source, if not nil, is used instead of
	// reading it.
	Filename string
	Source   []byte
	// Registry holds the Go modules; nil means the built-ins only.
	Registry *jsmodule.Registry
	// Helpers is served under HelperPrefix (the embedded js/ directory).
	Helpers fs.FS
	// Env is the script's __ENV (system env, when included, plus -e).
	Env map[string]string
	// FreezeEnv makes __ENV a frozen object (k6 v2.2's freeze-env feature
	// flag: internal/js/env.go): assignments are refused, a TypeError in
	// module code.
	FreezeEnv bool
	// Logger gets console output and script errors; nil discards.
	Logger *Logger
	// Collector receives samples (each VU records through its own buffer);
	// nil gives the bundle a private collector.
	Collector *metrics.Collector
	// Control is the run this bundle belongs to (k6/execution); nil is a
	// stand-alone bundle whose test.abort/fail only record.
	Control Controller
	// ReadFile reads local files; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// Bundle is a compiled script plus what its first init found.
type Bundle struct {
	cfg     Config
	loader  *loader
	main    sobek.ModuleRecord
	mainURL *url.URL
	metrics *metrics.Builtins

	// Options is the script's `options` export as JSON (nil if none).
	Options json.RawMessage
	// Exports lists the exported names whose values are functions.
	Exports []string

	mergedOptions atomic.Pointer[json.RawMessage]
	mergedDoc     atomic.Pointer[lazyjson.Doc] // mergedOptions parsed once for every VU
	throw         atomic.Bool
	envKeys       []string // sorted keys of cfg.Env, shared by every __ENV
	shared        sharedArrays
	sys           atomic.Pointer[SystemTags]
	testTags      atomic.Pointer[map[string]string]
	vus           sync.Map // *sobek.Runtime -> *VU
	inits         atomic.Int64
	control       Controller
	pushBufs      sharedBuffers // VU.PushShared's
}

// NewBundle compiles the script and runs its init code once with __VU = 0 in
// a throwaway runtime to read `options` and the exports (spec §1.1). After it
// the file system is locked: VUs can only read what this init read.
func NewBundle(ctx context.Context, cfg Config) (*Bundle, error) {
	if cfg.Registry == nil {
		cfg.Registry = NewRegistry()
	}
	if cfg.Collector == nil {
		cfg.Collector = metrics.NewCollector(metrics.NewRegistry(), metrics.CollectorOptions{})
	}
	b := &Bundle{cfg: cfg, control: cfg.Control, envKeys: sortedKeys(cfg.Env)}
	b.pushBufs.init(cfg.Collector)
	if b.control == nil {
		b.control = &StandaloneControl{}
	}
	bm, err := cfg.Collector.Registry().RegisterBuiltins()
	if err != nil {
		return nil, err
	}
	b.metrics = bm
	b.loader = newLoader(cfg.Registry, cfg.Helpers, cfg.ReadFile)
	b.loader.host = b
	b.mainURL = fileURL(cfg.Filename)
	if cfg.Source != nil {
		p := filepath.FromSlash(b.mainURL.Path)
		b.loader.files[p] = cfg.Source
	}
	main, err := b.loader.load(b.mainURL)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("script %s: %w", cfg.Filename, err)
		}
		return nil, &ScriptError{Phase: "init", Err: err}
	}
	if err := main.Link(); err != nil {
		return nil, &ScriptError{Phase: "init", Err: err}
	}
	b.main = main

	vu, err := b.newVU(ctx, 0, 0)
	if err != nil {
		return nil, err
	}
	defer vu.Close()
	b.loader.lock()
	names := vu.exportNames()
	for _, n := range names {
		v := vu.exportValue(n)
		if n == "options" {
			if v != nil && !sobek.IsUndefined(v) && !sobek.IsNull(v) {
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false) // keep "p(95)<200" readable in errors and outputs
				if err := enc.Encode(v.Export()); err != nil {
					return nil, configerr.New(fmt.Errorf("options: %w", err))
				}
				b.Options = bytes.TrimRight(buf.Bytes(), "\n")
			}
			continue
		}
		if _, ok := sobek.AssertFunction(v); ok {
			b.Exports = append(b.Exports, n)
		} else if n == "setup" || n == "teardown" || n == "handleSummary" {
			return nil, configerr.New(fmt.Errorf("exported %s must be a function", n))
		}
	}
	sort.Strings(b.Exports)
	if len(b.Exports) == 0 {
		return nil, configerr.New(errors.New("no exported functions in script"))
	}
	return b, nil
}

// SystemTags are the system tags the host attaches (k6's systemTags option;
// vu and iter go into sample metadata).
type SystemTags struct {
	Scenario, Group, Check, VU, Iter bool
}

// NewSystemTags reads a systemTags list.
func NewSystemTags(names []string) SystemTags {
	var s SystemTags
	for _, n := range names {
		switch n {
		case "scenario":
			s.Scenario = true
		case "group":
			s.Group = true
		case "check":
			s.Check = true
		case "vu":
			s.VU = true
		case "iter":
			s.Iter = true
		}
	}
	return s
}

// SetSystemTags chooses the system tags; call it before creating VUs.
func (b *Bundle) SetSystemTags(s SystemTags) { b.sys.Store(&s) }

// SetTestTags sets the test-wide tags (options.tags, --tag) that setup and
// teardown samples carry, as iterations do (k6 tags every sample of the run
// with them); call it before RunSetup.
func (b *Bundle) SetTestTags(tags map[string]string) { b.testTags.Store(&tags) }

func (b *Bundle) lifecycleTags() map[string]string {
	if t := b.testTags.Load(); t != nil {
		return *t
	}
	return nil
}

func (b *Bundle) systemTags() SystemTags {
	if s := b.sys.Load(); s != nil {
		return *s
	}
	return NewSystemTags(metrics.DefaultSystemTags())
}

// SetThrow makes invalid metric values throw instead of warning (the
// `throw` option / -w).
func (b *Bundle) SetThrow(on bool) { b.throw.Store(on) }

// HasExport reports whether name is an exported function.
func (b *Bundle) HasExport(name string) bool {
	i := sort.SearchStrings(b.Exports, name)
	return i < len(b.Exports) && b.Exports[i] == name
}

// InitCount is how many times the init code has run (every runtime).
func (b *Bundle) InitCount() int64 { return b.inits.Load() }

// SetMergedOptions stores the consolidated options: every VU initialised
// afterwards sees them in its `options` export, and k6/execution's
// test.options returns them. They are parsed once here; each VU's members
// become JS values as its script reads them (lazyjson).
func (b *Bundle) SetMergedOptions(raw json.RawMessage) error {
	doc, err := lazyjson.Parse(raw)
	if err != nil {
		return fmt.Errorf("consolidated options: %w", err)
	}
	b.mergedOptions.Store(&raw)
	if doc.IsObject() {
		b.mergedDoc.Store(doc)
	}
	return nil
}

func (b *Bundle) vuFor(rt *sobek.Runtime) *VU {
	v, ok := b.vus.Load(rt)
	if !ok {
		return nil
	}
	return v.(*VU)
}

// NewVU creates a VU and runs the init code in it. id is __VU (1-based
// instance id); idInTest the striped global id.
func (b *Bundle) NewVU(ctx context.Context, id, idInTest uint64) (*VU, error) {
	return b.newVU(ctx, id, idInTest)
}

// Controller is the run as seen from scripts (k6/execution) and the host.
type Controller interface {
	// Abort stops the whole run (test.abort); reason may be empty.
	Abort(reason string)
	// Fail marks the run failed without stopping it (test.fail).
	Fail(reason string)
	// Instance returns this instance's counters.
	Instance() InstanceStats
}

// InstanceStats are k6/execution's `instance` values.
type InstanceStats struct {
	CurrentTestRunDuration time.Duration
	IterationsCompleted    int64
	IterationsInterrupted  int64
	VUsActive              int64
	VUsInitialized         int64
}

// StandaloneControl is a Controller that only records what was asked.
type StandaloneControl struct {
	mu       sync.Mutex
	Aborted  bool
	Failed   bool
	Reasons  []string
	Started  time.Time
	Counters InstanceStats
}

// Abort implements Controller.
func (c *StandaloneControl) Abort(reason string) {
	c.mu.Lock()
	c.Aborted = true
	c.Reasons = append(c.Reasons, reason)
	c.mu.Unlock()
}

// Fail implements Controller.
func (c *StandaloneControl) Fail(reason string) {
	c.mu.Lock()
	c.Failed = true
	c.Reasons = append(c.Reasons, reason)
	c.mu.Unlock()
}

// Instance implements Controller.
func (c *StandaloneControl) Instance() InstanceStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Counters
}

// Files are the local files the first init read — the script, its
// imports, open()ed files (buzz.load's TOML among them) — by absolute path:
// what an archive of the test must hold.
func (b *Bundle) Files() map[string][]byte {
	b.loader.mu.Lock()
	defer b.loader.mu.Unlock()
	out := make(map[string][]byte, len(b.loader.files))
	for p, data := range b.loader.files {
		out[p] = data
	}
	return out
}

// MainPath is the script's absolute path.
func (b *Bundle) MainPath() string { return filepath.FromSlash(b.mainURL.Path) }
