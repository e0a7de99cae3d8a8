// The VU's view of its modules: exports, require(), open() and the module stack they resolve against.

package jshost

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/lazyjson"
)

// exportNames lists the main module's exports.
func (v *VU) exportNames() []string {
	var names []string
	switch r := v.b.main.(type) {
	case *cjsRecord:
		inst, _ := v.rt.GetModuleInstance(r).(*cjsInstance)
		if inst != nil {
			if o, ok := inst.exports.(*sobek.Object); ok {
				names = o.Keys()
			}
		}
	default:
		r.GetExportedNames(func(n []string) { names = n })
	}
	return names
}

// exportValue returns the value of an export of the main module.
func (v *VU) exportValue(name string) sobek.Value {
	m := v.b.main
	if _, ok := m.(*cjsRecord); ok {
		return v.rt.GetModuleInstance(m).GetBindingValue(name)
	}
	bind, ambiguous := m.ResolveExport(name)
	if bind == nil || ambiguous {
		return nil
	}
	inst := v.rt.GetModuleInstance(bind.Module)
	if inst == nil {
		return nil
	}
	if bind.BindingName == "*namespace*" {
		return v.rt.NamespaceObjectFor(bind.Module)
	}
	return inst.GetBindingValue(bind.BindingName)
}

// overwriteOptions sets each consolidated option on the script's `options`
// object, as k6 does for every VU but the first. Objects and arrays among
// them are lazy views of the shared document: decoded whole, they were
// ~22 KB of every VU of a Buzz scenario script.
func (v *VU) overwriteOptions(doc *lazyjson.Doc) {
	opt, ok := v.exportValue("options").(*sobek.Object)
	if !ok {
		return
	}
	for i, k := range doc.Keys() {
		_ = opt.Set(k, doc.Member(v.rt, i))
	}
}

func (v *VU) pushModule(r sobek.ModuleRecord) { v.modStack = append(v.modStack, r) }

func (v *VU) popModule() { v.modStack = v.modStack[:len(v.modStack)-1] }

// activeModule is the module whose code is running: the innermost CommonJS
// module being executed, else the ES module of the calling function.
func (v *VU) activeModule() any {
	if n := len(v.modStack); n > 0 {
		return v.modStack[n-1]
	}
	if m := v.rt.GetActiveScriptOrModule(); m != nil {
		return m
	}
	return v.b.main
}

func (v *VU) currentDir() string {
	u := v.b.loader.urlOf(v.activeModule())
	if u == nil || u.Scheme != "file" {
		u = v.b.mainURL
	}
	return path.Dir(u.Path)
}

// openBytes reads a file the way open() does.
func (v *VU) openBytes(p string) ([]byte, error) {
	if v.initEnv == nil {
		return nil, errors.New("open() can only be called in the init context (the script's top level)")
	}
	if p == "" {
		return nil, errors.New("open() needs a file name")
	}
	full := cleanPath(v.currentDir(), p)
	return v.b.loader.readPath(filepath.FromSlash(full))
}

func (v *VU) open(call sobek.FunctionCall) sobek.Value {
	b, err := v.openBytes(call.Argument(0).String())
	if err != nil {
		v.throw(err)
	}
	if mode := call.Argument(1); !sobek.IsUndefined(mode) && mode.String() == "b" {
		return v.rt.ToValue(v.rt.NewArrayBuffer(append([]byte(nil), b...)))
	}
	return v.rt.ToValue(string(b))
}

func (v *VU) requireFrom(ref sobek.ModuleRecord) func(sobek.FunctionCall) sobek.Value {
	return func(call sobek.FunctionCall) sobek.Value {
		return v.require(ref, call.Argument(0).String())
	}
}

// require loads a module synchronously from init code.
func (v *VU) require(ref any, spec string) sobek.Value {
	if v.initEnv == nil {
		v.throw(errors.New("require() can only be called in the init context"))
	}
	rec, err := v.b.loader.resolve(ref, spec)
	if err != nil {
		v.throw(err)
	}
	cm, ok := rec.(sobek.CyclicModuleRecord)
	if !ok {
		v.throw(fmt.Errorf("require(%q): unsupported module type", spec))
	}
	if err := cm.Link(); err != nil {
		v.throw(err)
	}
	p := v.rt.CyclicModuleRecordEvaluate(cm, v.b.loader.resolve)
	switch p.State() {
	case sobek.PromiseStateRejected:
		panic(p.Result())
	case sobek.PromiseStatePending:
		v.throw(fmt.Errorf("require(%q): module uses top-level await; import it instead", spec))
	}
	switch inst := v.rt.GetModuleInstance(rec).(type) {
	case *cjsInstance:
		return inst.exports
	case *goModuleInstance:
		return inst.value("default")
	default:
		return v.rt.NamespaceObjectFor(rec)
	}
}
