package jshost

import (
	"fmt"
	"sort"
	"sync"

	"github.com/grafana/sobek"
	"github.com/grafana/sobek/parser"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// goModuleRecord is a registry module seen as an ES module. The record is
// shared; Instantiate builds the per-VU instance through the module's
// factory.
type goModuleRecord struct {
	path string
	mod  jsmodule.Module
	host *Bundle

	mu       sync.Mutex
	names    []string // export names, learned from the first instance
	defNames []string // the named exports, sorted: the lazy default object's keys
}

var (
	_ sobek.CyclicModuleRecord   = (*goModuleRecord)(nil)
	_ sobek.CyclicModuleInstance = (*goModuleInstance)(nil)
)

func (r *goModuleRecord) Link() error                  { return nil }
func (r *goModuleRecord) RequestedModules() []string   { return nil }
func (r *goModuleRecord) InitializeEnvironment() error { return nil }
func (r *goModuleRecord) Evaluate(rt *sobek.Runtime) *sobek.Promise {
	return rt.CyclicModuleRecordEvaluate(r, r.host.loader.resolve)
}

func (r *goModuleRecord) ResolveExport(name string, _ ...sobek.ResolveSetElement) (*sobek.ResolvedBinding, bool) {
	return &sobek.ResolvedBinding{Module: r, BindingName: name}, false
}

func (r *goModuleRecord) GetExportedNames(cb func([]string), _ ...sobek.ModuleRecord) bool {
	r.mu.Lock()
	names := r.names
	r.mu.Unlock()
	cb(names)
	return true
}

func (r *goModuleRecord) Instantiate(rt *sobek.Runtime) (sobek.CyclicModuleInstance, error) {
	vu := r.host.vuFor(rt)
	if vu == nil {
		return nil, fmt.Errorf("module %q: runtime has no VU", r.path)
	}
	inst, err := r.mod.NewInstance(vu)
	if err != nil {
		return nil, fmt.Errorf("module %q: %w", r.path, err)
	}
	mi := &goModuleInstance{rt: rt, ex: inst.Exports()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.defNames = append([]string(nil), mi.ex.NamedList()...)
		sort.Strings(r.defNames)
		names := []string{"default"}
		names = append(names, r.defNames...)
		if mi.ex.Named == nil && mi.ex.Lookup == nil && mi.ex.Default != nil {
			if o, ok := mi.value("default").(*sobek.Object); ok {
				names = append(names, o.Keys()...)
			}
		}
		sort.Strings(names)
		r.names = names
	}
	mi.defNames = r.defNames
	return mi, nil
}

// goModuleInstance is one VU's instance of a Go module. Its exports become
// JS values one by one, the first time the script reads each (an import
// binding, a namespace or default-object property): a JS function is
// ~0.5 KB, and most scripts read a few of a module's exports (all of
// k6/http's built eagerly were 14 KB of an idle VU; docs/benchmarks.md
// "Clients per core").
type goModuleInstance struct {
	rt       *sobek.Runtime
	ex       jsmodule.Exports
	defNames []string     // the record's (shared)
	def      sobek.Value  // the default export, built on first read
	named    []namedValue // named exports converted so far (a few)
}

type namedValue struct {
	name string
	v    sobek.Value
}

func (m *goModuleInstance) HasTLA() bool { return false }
func (m *goModuleInstance) ExecuteModule(_ *sobek.Runtime, _, _ func(any) error) (sobek.CyclicModuleInstance, error) {
	return m, nil
}

// value is the JS value of a named export (nil if there is none), converted
// once.
func (m *goModuleInstance) value(name string) sobek.Value {
	if name == "default" {
		if m.def == nil {
			if m.ex.Default != nil {
				m.def = m.rt.ToValue(m.ex.Default)
			} else {
				// An object holding the named exports, each converted
				// when first read (the same value as the named binding).
				names := m.defNames
				m.def = jsmodule.NewLazyObject(m.rt, names, func(i int) sobek.Value { return m.value(names[i]) })
			}
		}
		return m.def
	}
	for _, n := range m.named {
		if n.name == name {
			return n.v
		}
	}
	g, ok := m.ex.Get(name)
	if !ok {
		return nil
	}
	v := m.rt.ToValue(g)
	m.named = append(m.named, namedValue{name, v})
	return v
}

func (m *goModuleInstance) GetBindingValue(name string) sobek.Value {
	if v := m.value(name); v != nil {
		return v
	}
	if o, ok := m.value("default").(*sobek.Object); ok {
		return o.Get(name)
	}
	return sobek.Undefined()
}

// cjsRecord is a script without import/export, run as CommonJS: its body is
// wrapped in a function of (exports, module, require) compiled once.
type cjsRecord struct {
	name   string
	prg    *sobek.Program
	loader *loader
}

var _ sobek.CyclicModuleRecord = (*cjsRecord)(nil)

func compileCJS(name, src string) (*cjsRecord, error) {
	// Kept on the first line so that line numbers in errors stay right.
	ast, err := parser.ParseFile(nil, name, "(function (exports, module, require) {"+src+"\n})", 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, syntaxError(err)
	}
	prg, err := sobek.CompileAST(ast, false)
	if err != nil {
		return nil, err
	}
	return &cjsRecord{name: name, prg: prg}, nil
}

func (r *cjsRecord) Link() error                  { return nil }
func (r *cjsRecord) RequestedModules() []string   { return nil }
func (r *cjsRecord) InitializeEnvironment() error { return nil }
func (r *cjsRecord) Evaluate(rt *sobek.Runtime) *sobek.Promise {
	return rt.CyclicModuleRecordEvaluate(r, r.loader.resolve)
}

func (r *cjsRecord) ResolveExport(name string, _ ...sobek.ResolveSetElement) (*sobek.ResolvedBinding, bool) {
	return &sobek.ResolvedBinding{Module: r, BindingName: name}, false
}

func (r *cjsRecord) GetExportedNames(cb func([]string), _ ...sobek.ModuleRecord) bool {
	// Names are only known per runtime after execution; namespace imports of
	// CommonJS files see the default export only.
	cb([]string{"default"})
	return true
}

func (r *cjsRecord) Instantiate(rt *sobek.Runtime) (sobek.CyclicModuleInstance, error) {
	return &cjsInstance{rec: r}, nil
}

type cjsInstance struct {
	rec     *cjsRecord
	exports sobek.Value
}

func (m *cjsInstance) HasTLA() bool { return false }

func (m *cjsInstance) ExecuteModule(rt *sobek.Runtime, _, _ func(any) error) (sobek.CyclicModuleInstance, error) {
	v, err := rt.RunProgram(m.rec.prg)
	if err != nil {
		return nil, err
	}
	fn, ok := sobek.AssertFunction(v)
	if !ok {
		return nil, errNotFunction
	}
	vu := m.rec.loader.host.vuFor(rt)
	module := rt.NewObject()
	exports := rt.NewObject()
	_ = module.Set("exports", exports)
	var req sobek.Value = sobek.Undefined()
	if vu != nil {
		req = rt.ToValue(vu.requireFrom(m.rec))
		vu.pushModule(m.rec)
		defer vu.popModule()
	}
	if _, err := fn(sobek.Undefined(), exports, module, req); err != nil {
		return nil, err
	}
	m.exports = module.Get("exports")
	return m, nil
}

func (m *cjsInstance) GetBindingValue(name string) sobek.Value {
	if m.exports == nil {
		return sobek.Undefined()
	}
	o, ok := m.exports.(*sobek.Object)
	if name == "default" {
		// exports.default wins, so `exports.default = function` scripts
		// work; otherwise the whole exports object is the default.
		if ok {
			if d := o.Get("default"); d != nil && !sobek.IsUndefined(d) {
				return d
			}
		}
		return m.exports
	}
	if ok {
		return o.Get(name)
	}
	return sobek.Undefined()
}
