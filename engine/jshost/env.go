package jshost

import (
	"sort"

	"github.com/grafana/sobek"
)

// envView is __ENV: a plain-looking mutable object whose initial content is
// a map shared by every VU, with this VU's writes and deletions kept apart.
// Copying the whole environment into every VU cost ~4.5 KB per VU.
type envView struct {
	rt      *sobek.Runtime
	base    map[string]string
	keys    []string // base's keys, sorted, shared
	over    map[string]sobek.Value
	deleted map[string]bool
}

// sortedKeys lists a map's keys in order.
func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func (e *envView) Get(k string) sobek.Value {
	if v, ok := e.over[k]; ok {
		return v
	}
	if e.deleted[k] {
		return nil
	}
	if v, ok := e.base[k]; ok {
		return e.rt.ToValue(v)
	}
	return nil
}

func (e *envView) Set(k string, v sobek.Value) bool {
	if e.over == nil {
		e.over = map[string]sobek.Value{}
	}
	e.over[k] = v
	delete(e.deleted, k)
	return true
}

func (e *envView) Has(k string) bool {
	if _, ok := e.over[k]; ok {
		return true
	}
	_, ok := e.base[k]
	return ok && !e.deleted[k]
}

func (e *envView) Delete(k string) bool {
	delete(e.over, k)
	if _, ok := e.base[k]; ok {
		if e.deleted == nil {
			e.deleted = map[string]bool{}
		}
		e.deleted[k] = true
	}
	return true
}

func (e *envView) Keys() []string {
	if len(e.over) == 0 && len(e.deleted) == 0 {
		return e.keys
	}
	out := make([]string, 0, len(e.keys)+len(e.over))
	for _, k := range e.keys {
		if _, shadowed := e.over[k]; !shadowed && !e.deleted[k] {
			out = append(out, k)
		}
	}
	for k := range e.over {
		out = append(out, k)
	}
	return out
}
