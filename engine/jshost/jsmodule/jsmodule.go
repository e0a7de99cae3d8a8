// Package jsmodule is the contract between the script host (engine/jshost) and the
// Go code behind `import ... from "k6/..."`: the registry a command builds, the
// Module a Go package provides, and the VU view each module instance gets.
//
// Nothing registers itself at init time: cmd/buzzload/run.go builds a Registry
// (the built-ins plus `k6/x/buzz`) and hands it to the host. A Module is
// shared by every VU; NewInstance is called once per VU runtime, on that VU's
// goroutine, while its init code imports the module.
package jsmodule

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/eventloop"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Module is a Go JS module. It must be safe to call from many VU goroutines.
type Module interface {
	// NewInstance builds this VU's instance. vu stays valid for the VU's
	// whole life; read its context and state at call time, not here.
	NewInstance(vu VU) (Instance, error)
}

// Instance is one VU's module object.
type Instance interface {
	Exports() Exports
}

// Exports are what `import` sees. Named exports win; a name missing from
// Named falls back to a property of Default. With only Named, the default
// export is an object holding them. The host turns each Go value into a JS
// value when the script first reads it, so give Go values (functions,
// strings, structs) rather than building JS objects here.
type Exports struct {
	Default any
	Named   map[string]any
	// Names and Lookup, when Lookup is set, stand for Named without a map
	// per VU: Names lists the named exports (shared by every VU; never
	// modified) and Lookup(name) returns one's Go value, called once per
	// name and VU when the script first reads it.
	Names  []string
	Lookup func(name string) any
}

// Has reports whether name is a named export.
func (e *Exports) Has(name string) bool {
	if e.Lookup != nil {
		return slices.Contains(e.Names, name)
	}
	_, ok := e.Named[name]
	return ok
}

// NamedList lists the named exports (unsorted for Named).
func (e *Exports) NamedList() []string {
	if e.Lookup != nil {
		return e.Names
	}
	return slices.Collect(maps.Keys(e.Named))
}

// Get returns the Go value of a named export.
func (e *Exports) Get(name string) (any, bool) {
	if e.Lookup != nil {
		if !e.Has(name) {
			return nil, false
		}
		return e.Lookup(name), true
	}
	v, ok := e.Named[name]
	return v, ok
}

// ModuleFunc adapts a function to Module.
type ModuleFunc func(vu VU) (Instance, error)

// NewInstance implements Module.
func (f ModuleFunc) NewInstance(vu VU) (Instance, error) { return f(vu) }

// StaticExports is an Instance that always returns the same exports.
type StaticExports Exports

// Exports implements Instance.
func (s StaticExports) Exports() Exports { return Exports(s) }

// VU is what a module instance may touch of the VU that imported it. Call
// its methods on the VU's goroutine (inside a JS call or a queued callback),
// except where a method says it is safe from any goroutine: take what a
// background goroutine needs (the context, the tag set, the enqueue
// function) before starting it.
type VU interface {
	// Runtime is the VU's sobek runtime.
	Runtime() *sobek.Runtime
	// Context is cancelled when the current call (iteration, setup,
	// teardown, init) ends or is interrupted. Async Go work started for the
	// call must watch it.
	Context() context.Context
	// ScenarioContext outlives single iterations: it ends when the
	// scenario the VU is active in stops (its graceful stop ran out, or the
	// run was aborted). Use it for work that spans iterations, such as a
	// client session a VU keeps across them.
	ScenarioContext() context.Context
	// RegisterCallback reserves a slot on the VU's event loop (see
	// eventloop.Loop.RegisterCallback). Call on the VU goroutine.
	RegisterCallback() eventloop.Enqueue
	// State is nil during init code and set for setup, iterations, teardown.
	State() *State
	// InitEnv is set only while init code runs.
	InitEnv() *InitEnv
	// Metrics defines metrics and pushes samples.
	Metrics() Metrics
	// TestOptions is the run's consolidated options as JSON (k6 names:
	// scenarios, executionSegment, executionSegmentSequence, tags, ...);
	// nil while the first init reads the script's options.
	TestOptions() []byte
	// AddDataTransfer counts bytes the module moved on the network; the VU
	// reports them as data_sent / data_received after each iteration. Safe
	// from any goroutine.
	AddDataTransfer(sent, received int64)
}

// InitEnv is what init code has that later code has not.
type InitEnv struct {
	// Open reads a file the way open() does (relative to the current module,
	// only files the first init read once the file system is locked).
	Open func(path string) ([]byte, error)
}

// State is the VU's execution state outside init.
type State struct {
	// VUID is the instance-local id (1-based; 0 in setup and teardown).
	VUID uint64
	// VUIDInTest is the striped global id.
	VUIDInTest uint64
	// Iteration is __ITER: this VU's iteration count across scenarios.
	Iteration int64
	// Tags is the VU's live tag set (test-wide + scenario + `scenario` +
	// `group` + vu.metrics.tags). Modules copy it when they emit.
	Tags *TagMap
	// Metadata is non-indexed sample metadata (vu.metrics.metadata).
	Metadata *TagMap
	// Group is the current group path ("" at root).
	Group string
	// Scenario is the active scenario's name ("" in setup and teardown),
	// ScenarioStart when its timeline started (k6's scenario.startTime).
	Scenario      string
	ScenarioStart time.Time
	// Stage and StageName are the current iteration's ramp stage (our
	// scenario.stage extension); Stage is -1 when the scenario has none.
	Stage     int
	StageName string
	// IterationDue is when an arrival-rate executor planned this
	// iteration's start (zero for the others): the Buzz module's paced
	// low-level calls are due then (issue 14).
	IterationDue time.Time
	// Phase says what the VU is running.
	Phase Phase
}

// Phase of the VU.
type Phase uint8

// Phases a VU's code can run in.
const (
	PhaseInit Phase = iota
	PhaseSetup
	PhaseIteration
	PhaseTeardown
	PhaseSummary
)

func (p Phase) String() string {
	switch p {
	case PhaseInit:
		return "init"
	case PhaseSetup:
		return "setup"
	case PhaseIteration:
		return "iteration"
	case PhaseTeardown:
		return "teardown"
	case PhaseSummary:
		return "handleSummary"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// TagMap is a small ordered string map. It is owned by one VU goroutine.
type TagMap struct {
	keys []string
	vals []string
	set  metrics.TagSet
	ok   bool // set is current
}

// TagSet returns the tags as an immutable metrics.TagSet, rebuilt only after
// a change, so emitting samples with unchanged tags allocates nothing.
func (t *TagMap) TagSet() metrics.TagSet {
	if !t.ok {
		tags := make([]metrics.Tag, len(t.keys))
		for i, k := range t.keys {
			tags[i] = metrics.Tag{Key: k, Value: t.vals[i]}
		}
		t.set, t.ok = metrics.NewTagSet(tags...), true
	}
	return t.set
}

// NewTagMap returns a tag map holding m.
func NewTagMap(m map[string]string) *TagMap {
	t := &TagMap{}
	for k, v := range m {
		t.Set(k, v)
	}
	return t
}

// Set adds or replaces key.
func (t *TagMap) Set(k, v string) {
	for i, kk := range t.keys {
		if kk == k {
			if t.vals[i] != v {
				t.vals[i], t.ok = v, false
			}
			return
		}
	}
	t.ok = false
	t.keys = append(t.keys, k)
	t.vals = append(t.vals, v)
}

// Get returns the value of k.
func (t *TagMap) Get(k string) (string, bool) {
	for i, kk := range t.keys {
		if kk == k {
			return t.vals[i], true
		}
	}
	return "", false
}

// Delete removes k.
func (t *TagMap) Delete(k string) {
	for i, kk := range t.keys {
		if kk == k {
			t.ok = false
			t.keys = append(t.keys[:i], t.keys[i+1:]...)
			t.vals = append(t.vals[:i], t.vals[i+1:]...)
			return
		}
	}
}

// Len is the number of tags.
func (t *TagMap) Len() int { return len(t.keys) }

// Keys returns the keys, sorted.
func (t *TagMap) Keys() []string {
	k := append([]string(nil), t.keys...)
	sort.Strings(k)
	return k
}

// Map copies the tags into a new map.
func (t *TagMap) Map() map[string]string {
	m := make(map[string]string, len(t.keys))
	for i, k := range t.keys {
		m[k] = t.vals[i]
	}
	return m
}

// Clone copies the tag map.
func (t *TagMap) Clone() *TagMap {
	return &TagMap{keys: append([]string(nil), t.keys...), vals: append([]string(nil), t.vals...), set: t.set, ok: t.ok}
}

// Metrics is the metric side of a VU as modules see it.
type Metrics interface {
	// Registry creates metrics or returns existing ones (k6's name rule; a
	// type clash is an error). Create them in init code.
	Registry() *metrics.Registry
	// Push records samples; it is safe from any goroutine. Build tag sets
	// on the VU goroutine from State().Tags.TagSet() (cached) plus your own
	// tags, and take them along to the goroutine that measures.
	Push(samples ...metrics.Sample)
}

// Registry maps import paths to modules. Build it once before the run; it is
// read-only afterwards.
type Registry struct {
	mods map[string]Module
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{mods: map[string]Module{}} }

// Register adds a module under path ("k6", "k6/metrics", "k6/x/buzz", ...).
// Only "k6" and paths under "k6/" may be registered; extensions belong under
// "k6/x/". Registering a path twice is an error.
func (r *Registry) Register(path string, m Module) error {
	if path != "k6" && !strings.HasPrefix(path, "k6/") {
		return fmt.Errorf("module path %q: Go modules live under k6/ (extensions under k6/x/)", path)
	}
	if m == nil {
		return fmt.Errorf("module path %q: nil module", path)
	}
	if _, ok := r.mods[path]; ok {
		return fmt.Errorf("module path %q registered twice", path)
	}
	r.mods[path] = m
	return nil
}

// Get returns the module registered at path.
func (r *Registry) Get(path string) (Module, bool) {
	m, ok := r.mods[path]
	return m, ok
}

// Paths lists the registered paths, sorted.
func (r *Registry) Paths() []string {
	p := make([]string, 0, len(r.mods))
	for k := range r.mods {
		p = append(p, k)
	}
	sort.Strings(p)
	return p
}
