package jshost

import (
	"errors"
	"fmt"
	"sync"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// sharedArrays holds the data of every SharedArray of a bundle: each element
// as JSON, computed once by the first init and shared read-only by all VUs,
// so big data sets cost memory once, not once per VU.
type sharedArrays struct {
	mu     sync.Mutex
	arrays map[string][]string
}

func newDataModule(mvu jsmodule.VU) (jsmodule.Instance, error) {
	v, err := hostVU(mvu)
	if err != nil {
		return nil, err
	}
	return jsmodule.StaticExports{Named: map[string]any{
		"SharedArray": func(call sobek.ConstructorCall) *sobek.Object { return v.newSharedArray(call) },
	}}, nil
}

// newSharedArray is `new SharedArray(name, fn)`: fn runs only the first time
// a name is seen and must return an array.
func (v *VU) newSharedArray(call sobek.ConstructorCall) *sobek.Object {
	if v.initEnv == nil {
		v.throw(errors.New("SharedArray can only be created in the init context"))
	}
	name := call.Argument(0).String()
	if sobek.IsUndefined(call.Argument(0)) || name == "" {
		v.throw(errors.New("SharedArray needs a name"))
	}
	sa := &v.b.shared
	sa.mu.Lock()
	elems, ok := sa.arrays[name]
	sa.mu.Unlock()
	if !ok {
		fn, isFn := sobek.AssertFunction(call.Argument(1))
		if !isFn {
			v.throw(fmt.Errorf("SharedArray %q: the second argument must be a function returning an array", name))
		}
		res, err := fn(sobek.Undefined())
		if err != nil {
			panic(err)
		}
		obj, isObj := res.(*sobek.Object)
		if !isObj || obj.ClassName() != "Array" {
			v.throw(fmt.Errorf("SharedArray %q: the function must return an array", name))
		}
		stringify, _ := sobek.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("stringify"))
		n := int(obj.Get("length").ToInteger())
		elems = make([]string, n)
		for i := 0; i < n; i++ {
			s, err := stringify(sobek.Undefined(), obj.Get(fmt.Sprint(i)))
			if err != nil {
				panic(err)
			}
			if sobek.IsUndefined(s) {
				elems[i] = "null"
			} else {
				elems[i] = s.String()
			}
		}
		sa.mu.Lock()
		if sa.arrays == nil {
			sa.arrays = map[string][]string{}
		}
		if prev, ok := sa.arrays[name]; ok {
			elems = prev
		} else {
			sa.arrays[name] = elems
		}
		sa.mu.Unlock()
	}
	return v.rt.NewDynamicArray(&sharedArray{vu: v, elems: elems})
}

// sharedArray is a read-only view; elements are decoded on access.
type sharedArray struct {
	vu    *VU
	elems []string
}

func (a *sharedArray) Len() int { return len(a.elems) }

func (a *sharedArray) Get(i int) sobek.Value {
	if i < 0 || i >= len(a.elems) {
		return sobek.Undefined()
	}
	val, err := a.vu.decode([]byte(a.elems[i]))
	if err != nil {
		a.vu.throw(err)
	}
	return val
}

func (a *sharedArray) Set(int, sobek.Value) bool {
	a.vu.throw(errors.New("SharedArray is read-only"))
	return false
}

func (a *sharedArray) SetLen(int) bool {
	a.vu.throw(errors.New("SharedArray is read-only"))
	return false
}
