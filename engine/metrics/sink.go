package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Sink aggregates the values of one metric (or sub-metric, group row,
// window). Sinks are not safe for concurrent use; the Collector guards its own.
type Sink interface {
	// Type is the metric type the sink aggregates.
	Type() Type
	// Add records one value. Non-finite values are ignored.
	Add(value float64, t time.Time)
	// IsEmpty reports whether no value was recorded.
	IsEmpty() bool
	// Value reads an aggregation. ok is false when the value does not exist
	// (k6 omits it): a Counter's rate when runDuration is 0, a Rate's rate
	// when empty, or an aggregation the type does not have.
	Value(s Stat, runDuration time.Duration) (v float64, ok bool)
	// Merge adds other's content; other must be of the same type.
	Merge(other Sink) error
	// Clone returns an independent deep copy.
	Clone() Sink
	// Reset empties the sink.
	Reset()

	toJSON() any
}

// NewSink returns an empty sink for a metric type.
func NewSink(t Type) Sink {
	switch t {
	case Counter:
		return &CounterSink{}
	case Gauge:
		return &GaugeSink{}
	case Rate:
		return &RateSink{}
	case Trend:
		return NewTrendSink()
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// CounterSink adds values up.
type CounterSink struct {
	sum float64
	n   int64
}

// Type is Counter.
func (c *CounterSink) Type() Type { return Counter }

// Add adds v (negative values are allowed, as in k6).
func (c *CounterSink) Add(v float64, _ time.Time) {
	if finite(v) {
		c.sum += v
		c.n++
	}
}

// IsEmpty reports whether nothing was added.
func (c *CounterSink) IsEmpty() bool { return c.n == 0 }

// Sum is the sum of the values.
func (c *CounterSink) Sum() float64 { return c.sum }

// Rate is the sum per second of runDuration (ok false when it is 0).
func (c *CounterSink) Rate(runDuration time.Duration) (float64, bool) {
	if runDuration <= 0 {
		return 0, false
	}
	return c.sum / runDuration.Seconds(), true
}

// Value reads count or rate.
func (c *CounterSink) Value(s Stat, d time.Duration) (float64, bool) {
	switch s.Kind {
	case StatCount:
		return c.sum, true
	case StatRate:
		return c.Rate(d)
	}
	return 0, false
}

// Merge adds another counter's sum.
func (c *CounterSink) Merge(o Sink) error {
	oc, ok := o.(*CounterSink)
	if !ok {
		return fmt.Errorf("cannot merge a %s sink into a counter sink", o.Type())
	}
	c.sum += oc.sum
	c.n += oc.n
	return nil
}

// Clone copies the sink.
func (c *CounterSink) Clone() Sink { cp := *c; return &cp }

// Reset empties the sink.
func (c *CounterSink) Reset() { *c = CounterSink{} }

type counterJSON struct {
	Type Type    `json:"type"`
	N    int64   `json:"n"`
	Sum  float64 `json:"sum"`
}

func (c *CounterSink) toJSON() any { return counterJSON{Counter, c.n, c.sum} }

// GaugeSink keeps the last value (by sample time) and the min and max.
type GaugeSink struct {
	last, min, max float64
	lastTime       int64 // unix nanoseconds of the last value
	n              int64
}

// Type is Gauge.
func (g *GaugeSink) Type() Type { return Gauge }

// Add records v at t. A value older than the current last one still counts
// for min and max but does not replace the last value, so batches that
// arrive out of order give the same result.
func (g *GaugeSink) Add(v float64, t time.Time) {
	if !finite(v) {
		return
	}
	ns := t.UnixNano()
	if g.n == 0 {
		g.last, g.min, g.max, g.lastTime = v, v, v, ns
		g.n = 1
		return
	}
	g.n++
	if ns >= g.lastTime {
		g.last, g.lastTime = v, ns
	}
	g.min = math.Min(g.min, v)
	g.max = math.Max(g.max, v)
}

// IsEmpty reports whether nothing was added.
func (g *GaugeSink) IsEmpty() bool { return g.n == 0 }

// Last, Min and Max read the sink (0 when empty, as k6 shows).
func (g *GaugeSink) Last() float64 { return g.last }

// Min is the smallest value.
func (g *GaugeSink) Min() float64 { return g.min }

// Max is the largest value.
func (g *GaugeSink) Max() float64 { return g.max }

// Value reads value (the last value, 0 when empty).
func (g *GaugeSink) Value(s Stat, _ time.Duration) (float64, bool) {
	switch s.Kind {
	case StatValue:
		return g.last, true
	case StatMin:
		return g.min, true
	case StatMax:
		return g.max, true
	}
	return 0, false
}

// Merge keeps the later last value (the larger on a tie, so the merge is
// commutative) and combines min and max.
func (g *GaugeSink) Merge(o Sink) error {
	og, ok := o.(*GaugeSink)
	if !ok {
		return fmt.Errorf("cannot merge a %s sink into a gauge sink", o.Type())
	}
	if og.n == 0 {
		return nil
	}
	if g.n == 0 {
		*g = *og
		return nil
	}
	if og.lastTime > g.lastTime || (og.lastTime == g.lastTime && og.last > g.last) {
		g.last, g.lastTime = og.last, og.lastTime
	}
	g.min = math.Min(g.min, og.min)
	g.max = math.Max(g.max, og.max)
	g.n += og.n
	return nil
}

// Clone copies the sink.
func (g *GaugeSink) Clone() Sink { cp := *g; return &cp }

// Reset empties the sink.
func (g *GaugeSink) Reset() { *g = GaugeSink{} }

type gaugeJSON struct {
	Type  Type    `json:"type"`
	N     int64   `json:"n"`
	Value float64 `json:"value"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Time  int64   `json:"time_ns"`
}

func (g *GaugeSink) toJSON() any { return gaugeJSON{Gauge, g.n, g.last, g.min, g.max, g.lastTime} }

// RateSink counts non-zero values ("passes") out of all values.
type RateSink struct {
	passes, total int64
}

// Type is Rate.
func (r *RateSink) Type() Type { return Rate }

// Add counts v as a pass when it is non-zero.
func (r *RateSink) Add(v float64, _ time.Time) {
	if !finite(v) {
		return
	}
	r.total++
	if v != 0 {
		r.passes++
	}
}

// IsEmpty reports whether nothing was added.
func (r *RateSink) IsEmpty() bool { return r.total == 0 }

// Passes is the number of non-zero values.
func (r *RateSink) Passes() int64 { return r.passes }

// Total is the number of values.
func (r *RateSink) Total() int64 { return r.total }

// Fails is Total - Passes.
func (r *RateSink) Fails() int64 { return r.total - r.passes }

// Ratio is Passes/Total, ok false when empty.
func (r *RateSink) Ratio() (float64, bool) {
	if r.total == 0 {
		return 0, false
	}
	return float64(r.passes) / float64(r.total), true
}

// Value reads rate.
func (r *RateSink) Value(s Stat, _ time.Duration) (float64, bool) {
	if s.Kind == StatRate {
		return r.Ratio()
	}
	return 0, false
}

// Merge adds the counts.
func (r *RateSink) Merge(o Sink) error {
	or, ok := o.(*RateSink)
	if !ok {
		return fmt.Errorf("cannot merge a %s sink into a rate sink", o.Type())
	}
	r.passes += or.passes
	r.total += or.total
	return nil
}

// Clone copies the sink.
func (r *RateSink) Clone() Sink { cp := *r; return &cp }

// Reset empties the sink.
func (r *RateSink) Reset() { *r = RateSink{} }

type rateJSON struct {
	Type   Type  `json:"type"`
	Passes int64 `json:"passes"`
	Total  int64 `json:"total"`
}

func (r *RateSink) toJSON() any { return rateJSON{Rate, r.passes, r.total} }

// MarshalSink writes a sink as JSON with its type.
func MarshalSink(s Sink) ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return json.Marshal(s.toJSON())
}

// UnmarshalSink reads what MarshalSink wrote, validating it.
func UnmarshalSink(b []byte) (Sink, error) {
	var head struct {
		Type Type `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	switch head.Type {
	case Counter:
		var j counterJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("counter sink: %w", err)
		}
		if j.N < 0 {
			return nil, fmt.Errorf("counter sink: negative n %d", j.N)
		}
		return &CounterSink{sum: j.Sum, n: j.N}, nil
	case Gauge:
		var j gaugeJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("gauge sink: %w", err)
		}
		if j.N < 0 {
			return nil, fmt.Errorf("gauge sink: negative n %d", j.N)
		}
		return &GaugeSink{last: j.Value, min: j.Min, max: j.Max, lastTime: j.Time, n: j.N}, nil
	case Rate:
		var j rateJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("rate sink: %w", err)
		}
		if j.Passes < 0 || j.Total < j.Passes {
			return nil, fmt.Errorf("rate sink: invalid counts passes=%d total=%d", j.Passes, j.Total)
		}
		return &RateSink{passes: j.Passes, total: j.Total}, nil
	case Trend:
		return unmarshalTrend(b)
	}
	return nil, fmt.Errorf("sink: missing or unknown type")
}
