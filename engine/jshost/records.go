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

	mu    sync.Mutex
	names []string // export names, learned from the first instance
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
	ex := inst.Exports()
	mi := &goModuleInstance{rt: rt, named: map[string]sobek.Value{}}
	for k, v := range ex.Named {
		mi.named[k] = rt.ToValue(v)
	}
	if ex.Default != nil {
		mi.def = rt.ToValue(ex.Default)
	} else {
		obj := rt.NewObject()
		for k, v := range mi.named {
			_ = obj.Set(k, v)
		}
		mi.def = obj
	}
	r.mu.Lock()
	if r.names == nil {
		names := []string{"default"}
		for k := range mi.named {
			names = append(names, k)
		}
		if o, ok := mi.def.(*sobek.Object); ok && ex.Named == nil {
			for _, k := range o.Keys() {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		r.names = names
	}
	r.mu.Unlock()
	return mi, nil
}

type goModuleInstance struct {
	rt    *sobek.Runtime
	def   sobek.Value
	named map[string]sobek.Value
}

func (m *goModuleInstance) HasTLA() bool { return false }
func (m *goModuleInstance) ExecuteModule(_ *sobek.Runtime, _, _ func(any) error) (sobek.CyclicModuleInstance, error) {
	return m, nil
}

func (m *goModuleInstance) GetBindingValue(name string) sobek.Value {
	if name == "default" {
		return m.def
	}
	if v, ok := m.named[name]; ok {
		return v
	}
	if o, ok := m.def.(*sobek.Object); ok {
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
