package jsmodule

import (
	"slices"

	"github.com/grafana/sobek"
)

// NewLazyObject returns a JS object whose properties are names, each value
// built by build(i) the first time a script reads names[i] and then kept.
// A JS function is about half a kilobyte in sobek and every VU has its own,
// so an object of many methods that a script calls two or three of should
// be built this way (k6/http's default export, console, buzz.load's
// scenario object). Scripts may set, add and delete properties as on a plain
// object; names must not change afterwards (it may be shared by every VU).
// The object is a sobek dynamic object: it cannot be frozen or given
// accessor properties.
func NewLazyObject(rt *sobek.Runtime, names []string, build func(i int) sobek.Value) *sobek.Object {
	return rt.NewDynamicObject(&lazyObject{names: names, build: build})
}

type lazyObject struct {
	names []string
	build func(int) sobek.Value
	built []builtMember          // few: a slice for every name was most of an unread object
	own   map[string]sobek.Value // set by the script; a nil value is deleted
	added []string               // keys the script added, in order
}

type builtMember struct {
	i int
	v sobek.Value
}

func (o *lazyObject) index(key string) int { return slices.Index(o.names, key) }

func (o *lazyObject) Get(key string) sobek.Value {
	if v, ok := o.own[key]; ok {
		return v
	}
	i := o.index(key)
	if i < 0 {
		return nil
	}
	for _, b := range o.built {
		if b.i == i {
			return b.v
		}
	}
	v := o.build(i)
	o.built = append(o.built, builtMember{i, v})
	return v
}

func (o *lazyObject) Set(key string, val sobek.Value) bool {
	if o.own == nil {
		o.own = map[string]sobek.Value{}
	}
	if _, seen := o.own[key]; !seen && o.index(key) < 0 {
		o.added = append(o.added, key)
	}
	o.own[key] = val
	return true
}

func (o *lazyObject) Has(key string) bool {
	if v, ok := o.own[key]; ok {
		return v != nil
	}
	return o.index(key) >= 0
}

func (o *lazyObject) Delete(key string) bool {
	if o.Has(key) {
		if o.own == nil {
			o.own = map[string]sobek.Value{}
		}
		o.own[key] = nil
	}
	return true
}

func (o *lazyObject) Keys() []string {
	out := make([]string, 0, len(o.names)+len(o.added))
	for _, k := range o.names {
		if o.Has(k) {
			out = append(out, k)
		}
	}
	for _, k := range o.added {
		if o.Has(k) {
			out = append(out, k)
		}
	}
	return out
}
