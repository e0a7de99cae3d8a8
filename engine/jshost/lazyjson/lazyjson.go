// Package lazyjson gives one JSON document to many sobek runtimes as JS
// values built as scripts read them. The document is parsed once and shared
// (it is immutable); each runtime gets objects and arrays that make their
// members JS values on first read and keep them, and copy what they hold on
// first write, so a VU pays for what its script touches. It serves the
// consolidated options every VU sees in its `options` export, and
// k6/x/buzz's sc.options() in VUs after the first (docs/benchmarks.md
// "Clients per core": decoding them whole was ~22 KB of every VU).
//
// The objects are sobek dynamic objects: their properties are writable,
// enumerable and configurable, and they cannot be frozen or given accessors.
// Exported to Go (Value.Export) they are json.Marshalers of their current
// content, so setup data built from them marshals as the plain objects would.
package lazyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/grafana/sobek"
)

// Doc is a parsed JSON document; safe to share between goroutines.
type Doc struct{ root *node }

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kObject
	kArray
)

// node is one JSON value. Objects keep their members in document order (a
// key given twice keeps its last value, at its first place, as JSON.parse
// does).
type node struct {
	kind  kind
	raw   json.RawMessage // the value's JSON text
	b     bool
	num   float64
	str   string
	keys  []string
	elems []*node // object members (parallel to keys) or array elements
	index map[string]int
}

// indexFrom is the member count above which a shared object node gets a
// key index; ownIndexFrom the same for a runtime's own copy (a map per VU
// costs more than scanning a few dozen keys: the options export, once the
// consolidated keys are set on it, has ~20).
const (
	indexFrom    = 8
	ownIndexFrom = 48
)

// Parse parses a JSON document.
func Parse(raw []byte) (*Doc, error) {
	n, err := parse(bytes.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	return &Doc{root: n}, nil
}

func parse(raw json.RawMessage) (*node, error) {
	n := &node{raw: raw}
	if len(raw) == 0 {
		return nil, errors.New("lazyjson: empty value")
	}
	switch raw[0] {
	case '{':
		n.kind = kObject
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := t.(string)
			if !ok {
				return nil, fmt.Errorf("lazyjson: object key %v is not a string", t)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			child, err := parse(v)
			if err != nil {
				return nil, err
			}
			if i := n.find(key); i >= 0 {
				n.elems[i] = child
				continue
			}
			n.keys = append(n.keys, key)
			n.elems = append(n.elems, child)
			if len(n.keys) > indexFrom {
				if n.index == nil {
					n.index = make(map[string]int, 2*indexFrom)
					for i, k := range n.keys {
						n.index[k] = i
					}
				}
				n.index[key] = len(n.keys) - 1
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	case '[':
		n.kind = kArray
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		for dec.More() {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			child, err := parse(v)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, child)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	case '"':
		n.kind = kString
		if err := json.Unmarshal(raw, &n.str); err != nil {
			return nil, err
		}
	case 't', 'f':
		n.kind = kBool
		if err := json.Unmarshal(raw, &n.b); err != nil {
			return nil, err
		}
	case 'n':
		if string(raw) != "null" {
			return nil, fmt.Errorf("lazyjson: invalid value %q", raw)
		}
		n.kind = kNull
	default:
		n.kind = kNumber
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, fmt.Errorf("lazyjson: invalid number %q", raw)
		}
		n.num = f
	}
	return n, nil
}

// find is the index of an object's member, or -1.
func (n *node) find(key string) int { return indexOf(n.index, n.keys, key) }

// indexOf is key's position in keys, through index when there is one
// (large objects), else by a scan; -1 when absent.
func indexOf(index map[string]int, keys []string, key string) int {
	if index != nil {
		if i, ok := index[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range keys {
		if k == key {
			return i
		}
	}
	return -1
}

// IsObject reports whether the document is a JSON object.
func (d *Doc) IsObject() bool { return d.root.kind == kObject }

// Keys are the top-level object's keys in document order (nil for other
// documents). Do not modify them.
func (d *Doc) Keys() []string { return d.root.keys }

// Member is the JS value of the top-level object's i-th member in rt.
func (d *Doc) Member(rt *sobek.Runtime, i int) sobek.Value { return value(rt, d.root.elems[i]) }

// Value is the whole document as a JS value in rt.
func (d *Doc) Value(rt *sobek.Runtime) sobek.Value { return value(rt, d.root) }

// Plain is the whole document as ordinary JS objects and arrays in rt,
// built at once: what JSON.parse of its text gives (the same property
// order, duplicate keys resolved the same way, own "__proto__" members,
// integers as integers), without decoding the text again in every runtime.
// Setup data takes this form (k6 gives each VU plain objects, which a
// script may freeze or give accessors; Value's views cannot be).
func (d *Doc) Plain(rt *sobek.Runtime) sobek.Value { return plain(rt, d.root) }

func plain(rt *sobek.Runtime, n *node) sobek.Value {
	switch n.kind {
	case kObject:
		o := rt.NewObject()
		for i, k := range n.keys {
			// Defined, not set: a "__proto__" member is an own property.
			_ = o.DefineDataProperty(k, plain(rt, n.elems[i]), sobek.FLAG_TRUE, sobek.FLAG_TRUE, sobek.FLAG_TRUE)
		}
		return o
	case kArray:
		vals := make([]any, len(n.elems))
		for i, e := range n.elems {
			vals[i] = plain(rt, e)
		}
		return rt.NewArray(vals...)
	default:
		return value(rt, n)
	}
}

// value makes a node a JS value: primitives as they are, objects and arrays
// as lazy views.
func value(rt *sobek.Runtime, n *node) sobek.Value {
	switch n.kind {
	case kNull:
		return sobek.Null()
	case kBool:
		return rt.ToValue(n.b)
	case kNumber:
		if i := int64(n.num); float64(i) == n.num && (n.num != 0 || !math.Signbit(n.num)) {
			return rt.ToValue(i) // an integer, as JSON.parse gives
		}
		return rt.ToValue(n.num)
	case kString:
		return rt.ToValue(n.str)
	case kObject:
		return rt.NewDynamicObject(&object{rt: rt, n: n, keys: n.keys})
	default:
		return rt.NewDynamicArray(&array{rt: rt, n: n})
	}
}

// object is one runtime's view of an object node. Until its first write it
// reads the shared node (keys is n.keys); afterwards keys and vals are its
// own.
type object struct {
	rt    *sobek.Runtime
	n     *node
	keys  []string
	vals  []sobek.Value // materialised members, parallel to keys (nil: not yet)
	owned bool
	index map[string]int // own key index once owned and large
}

func (o *object) find(key string) int {
	if !o.owned {
		return o.n.find(key)
	}
	return indexOf(o.index, o.keys, key)
}

func (o *object) at(i int) sobek.Value {
	if o.vals == nil {
		o.vals = make([]sobek.Value, len(o.keys))
	}
	if o.vals[i] == nil {
		o.vals[i] = value(o.rt, o.n.elems[i]) // only unowned slots are unset
	}
	return o.vals[i]
}

// own copies the shared key list before the first change.
func (o *object) own() {
	if o.owned {
		return
	}
	for i := range o.keys {
		o.at(i)
	}
	o.keys = append([]string(nil), o.keys...)
	o.owned = true
	o.reindex()
}

func (o *object) reindex() {
	o.index = nil
	if len(o.keys) > ownIndexFrom {
		o.index = make(map[string]int, len(o.keys))
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

// Get implements sobek.DynamicObject.
func (o *object) Get(key string) sobek.Value {
	if i := o.find(key); i >= 0 {
		return o.at(i)
	}
	return nil
}

// Set implements sobek.DynamicObject.
func (o *object) Set(key string, val sobek.Value) bool {
	if i := o.find(key); i >= 0 {
		o.at(i)
		o.vals[i] = val
		return true
	}
	o.own()
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, val)
	if o.index != nil || len(o.keys) > ownIndexFrom {
		o.reindex()
	}
	return true
}

// Has implements sobek.DynamicObject.
func (o *object) Has(key string) bool { return o.find(key) >= 0 }

// Delete implements sobek.DynamicObject.
func (o *object) Delete(key string) bool {
	if o.find(key) < 0 {
		return true
	}
	o.own()
	i := o.find(key)
	o.keys = append(o.keys[:i], o.keys[i+1:]...)
	o.vals = append(o.vals[:i], o.vals[i+1:]...)
	o.reindex()
	return true
}

// Keys implements sobek.DynamicObject.
func (o *object) Keys() []string { return append([]string(nil), o.keys...) }

// MarshalJSON encodes the object as it is now (Value.Export returns the
// view itself).
func (o *object) MarshalJSON() ([]byte, error) {
	if o.vals == nil && !o.owned {
		return o.n.raw, nil
	}
	return encode('{', '}', o.keys, o.vals, o.n.elems)
}

// encode writes an object (keys parallel to vals) or an array (keys nil)
// as it is now: member i from vals[i] once this runtime made it, else from
// the document's text. elems[i] is read only for unset slots: an owned
// array's appended elements have no node.
func encode(open, close byte, keys []string, vals []sobek.Value, elems []*node) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(open)
	for i, v := range vals {
		if i > 0 {
			buf.WriteByte(',')
		}
		if keys != nil {
			kb, _ := json.Marshal(keys[i])
			buf.Write(kb)
			buf.WriteByte(':')
		}
		raw := []byte(nil)
		if v == nil {
			raw = elems[i].raw
		} else {
			var err error
			if raw, err = marshal(v); err != nil {
				return nil, err
			}
		}
		buf.Write(raw)
	}
	buf.WriteByte(close)
	return buf.Bytes(), nil
}

func marshal(v sobek.Value) ([]byte, error) {
	if v == nil || sobek.IsUndefined(v) {
		return []byte("null"), nil
	}
	return json.Marshal(v.Export())
}

// array is one runtime's view of an array node; it copies the elements on
// first write.
type array struct {
	rt    *sobek.Runtime
	n     *node
	vals  []sobek.Value
	owned bool
}

func (a *array) materialise() {
	if a.vals == nil {
		a.vals = make([]sobek.Value, len(a.n.elems))
	}
}

// Len implements sobek.DynamicArray.
func (a *array) Len() int {
	if a.owned {
		return len(a.vals)
	}
	return len(a.n.elems)
}

// Get implements sobek.DynamicArray.
func (a *array) Get(idx int) sobek.Value {
	if idx < 0 || idx >= a.Len() {
		return nil
	}
	a.materialise()
	if a.vals[idx] == nil && !a.owned {
		a.vals[idx] = value(a.rt, a.n.elems[idx])
	}
	return a.vals[idx]
}

func (a *array) own() {
	if a.owned {
		return
	}
	for i := range a.n.elems {
		a.Get(i)
	}
	a.materialise()
	a.owned = true
}

// Set implements sobek.DynamicArray.
func (a *array) Set(idx int, val sobek.Value) bool {
	if idx < 0 {
		return false
	}
	a.own()
	for idx >= len(a.vals) {
		a.vals = append(a.vals, sobek.Undefined())
	}
	a.vals[idx] = val
	return true
}

// SetLen implements sobek.DynamicArray.
func (a *array) SetLen(n int) bool {
	if n < 0 {
		return false
	}
	a.own()
	for len(a.vals) < n {
		a.vals = append(a.vals, sobek.Undefined())
	}
	a.vals = a.vals[:n]
	return true
}

// MarshalJSON encodes the array as it is now.
func (a *array) MarshalJSON() ([]byte, error) {
	if a.vals == nil {
		return a.n.raw, nil
	}
	return encode('[', ']', nil, a.vals, a.n.elems)
}
