package metrics

import (
	"fmt"
	"sort"
	"sync"
)

// Type is a metric type: how its samples are aggregated.
type Type uint8

// The four k6 metric types.
const (
	Counter Type = iota + 1
	Gauge
	Rate
	Trend
)

var typeNames = [...]string{Counter: "counter", Gauge: "gauge", Rate: "rate", Trend: "trend"}

// String gives k6's spelling: counter, gauge, rate, trend.
func (t Type) String() string {
	if t >= Counter && t <= Trend {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// MarshalText writes k6's spelling.
func (t Type) MarshalText() ([]byte, error) {
	if t < Counter || t > Trend {
		return nil, fmt.Errorf("invalid metric type %d", uint8(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads k6's spelling.
func (t *Type) UnmarshalText(b []byte) error {
	for i := Counter; i <= Trend; i++ {
		if typeNames[i] == string(b) {
			*t = i
			return nil
		}
	}
	return fmt.Errorf("unknown metric type %q", b)
}

// ValueType says what a metric's values are: plain numbers, times in
// milliseconds, or data in bytes (k6's "contains").
type ValueType uint8

// The three k6 value types.
const (
	Default ValueType = iota
	Time
	Data
)

var valueTypeNames = [...]string{Default: "default", Time: "time", Data: "data"}

// String gives k6's spelling: default, time, data.
func (v ValueType) String() string {
	if v <= Data {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("ValueType(%d)", uint8(v))
}

// MarshalText writes k6's spelling.
func (v ValueType) MarshalText() ([]byte, error) {
	if v > Data {
		return nil, fmt.Errorf("invalid value type %d", uint8(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText reads k6's spelling.
func (v *ValueType) UnmarshalText(b []byte) error {
	for i := Default; i <= Data; i++ {
		if valueTypeNames[i] == string(b) {
			*v = i
			return nil
		}
	}
	return fmt.Errorf("unknown value type %q", b)
}

// Metric is a registered metric. Metrics are created by a Registry and never
// change; compare them by pointer.
type Metric struct {
	Name     string
	Type     Type
	Contains ValueType
	id       int // dense index within its registry; the Collector indexes sinks by it
}

// Registry holds the metrics of one test run, by name.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]*Metric
	list   []*Metric
}

// NewRegistry returns an empty registry. Call RegisterBuiltins to add k6's
// built-in metrics.
func NewRegistry() *Registry {
	return &Registry{byName: make(map[string]*Metric)}
}

// ValidateName checks k6's rule for metric names: ^[a-zA-Z_][a-zA-Z0-9_]{1,128}$
// (so 2 to 129 characters).
func ValidateName(name string) error {
	if len(name) < 2 || len(name) > 129 {
		return fmt.Errorf("invalid metric name %q: must be 2 to 129 characters of [a-zA-Z0-9_], not starting with a digit", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return fmt.Errorf("invalid metric name %q: must be 2 to 129 characters of [a-zA-Z0-9_], not starting with a digit", name)
		}
	}
	return nil
}

// New returns the metric with this name, creating it if it does not exist.
// Asking again with the same type and value type returns the same *Metric;
// a different type or value type is an error (as in k6).
func (r *Registry) New(name string, t Type, contains ValueType) (*Metric, error) {
	if t < Counter || t > Trend {
		return nil, fmt.Errorf("metric %q: invalid type %d", name, uint8(t))
	}
	if contains > Data {
		return nil, fmt.Errorf("metric %q: invalid value type %d", name, uint8(contains))
	}
	r.mu.RLock()
	m, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		if err := ValidateName(name); err != nil {
			return nil, err
		}
		r.mu.Lock()
		if m, ok = r.byName[name]; !ok {
			m = &Metric{Name: name, Type: t, Contains: contains, id: len(r.list)}
			r.byName[name] = m
			r.list = append(r.list, m)
		}
		r.mu.Unlock()
	}
	if m.Type != t || m.Contains != contains {
		return nil, fmt.Errorf("metric %q already exists as a %s with %s values; cannot redefine it as a %s with %s values",
			name, m.Type, m.Contains, t, contains)
	}
	return m, nil
}

// Binding is one metric a module defines and the field that holds it.
type Binding struct {
	Dst      **Metric
	Name     string
	Type     Type
	Contains ValueType
}

// Bind defines every metric of bs (New) and stores each in its Dst: the
// one loop every module that declares a set of metrics needs.
func (r *Registry) Bind(bs []Binding) error {
	for _, b := range bs {
		m, err := r.New(b.Name, b.Type, b.Contains)
		if err != nil {
			return err
		}
		*b.Dst = m
	}
	return nil
}

// Get returns the metric with this name, or nil.
func (r *Registry) Get(name string) *Metric {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// All returns every metric, sorted by name.
func (r *Registry) All() []*Metric {
	r.mu.RLock()
	out := append([]*Metric(nil), r.list...)
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// byID returns the metric with this dense id, or nil.
func (r *Registry) byID(id int) *Metric {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if id < 0 || id >= len(r.list) {
		return nil
	}
	return r.list[id]
}
