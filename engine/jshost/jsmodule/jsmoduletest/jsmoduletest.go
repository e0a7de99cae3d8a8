// Package jsmoduletest holds what a k6 module's own tests need to call it
// outside a run: a VU with a runtime and nothing else, and its exports set
// as a JS global.
package jsmoduletest

import (
	"context"
	"testing"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/eventloop"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// VU is a VU in init code: a runtime, a background context, no state, no
// metrics, no event loop (a module that needs them is tested through a run).
type VU struct{ RT *sobek.Runtime }

func (v *VU) Runtime() *sobek.Runtime              { return v.RT }
func (v *VU) Context() context.Context             { return context.Background() }
func (v *VU) ScenarioContext() context.Context     { return context.Background() }
func (v *VU) RegisterCallback() eventloop.Enqueue  { panic("jsmoduletest: no event loop") }
func (v *VU) State() *jsmodule.State               { return nil }
func (v *VU) InitEnv() *jsmodule.InitEnv           { return nil }
func (v *VU) Metrics() jsmodule.Metrics            { return nil }
func (v *VU) TestOptions() []byte                  { return nil }
func (v *VU) AddDataTransfer(sent, received int64) {}

// Runtime is a fresh runtime with m's named exports set as the global
// object name (as `import * as name from "..."` gives a script).
func Runtime(t testing.TB, m jsmodule.Module, name string) *sobek.Runtime {
	t.Helper()
	rt := sobek.New()
	rt.SetFieldNameMapper(sobek.UncapFieldNameMapper())
	in, err := m.NewInstance(&VU{RT: rt})
	if err != nil {
		t.Fatal(err)
	}
	ex := in.Exports()
	obj := rt.NewObject()
	for _, n := range ex.NamedList() {
		v, _ := ex.Get(n)
		if err := obj.Set(n, v); err != nil {
			t.Fatal(err)
		}
	}
	if ex.Default != nil {
		_ = obj.Set("default", ex.Default)
	}
	if err := rt.Set(name, obj); err != nil {
		t.Fatal(err)
	}
	return rt
}

// Eval runs src on rt and returns its value, failing the test on a throw.
func Eval(t testing.TB, rt *sobek.Runtime, src string) sobek.Value {
	t.Helper()
	v, err := rt.RunString(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}
