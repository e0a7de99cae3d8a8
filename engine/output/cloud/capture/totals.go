package capture

import (
	"math"
	"sort"
	"strings"
)

// Total is one series' values summed over every period of every push: what
// a script fixes, whatever the periods its samples fell into.
type Total struct {
	Type string
	// Counter: Sum. Rate: Nonzero of Count. Gauge: Count, Min, Max.
	// Trend: Count, Sum, Min, Max, Buckets (absolute index → count),
	// ExtraLow, ExtraHigh, MinResolution.
	Sum, Min, Max       float64
	Count, Nonzero      uint64
	Buckets             map[uint32]uint64
	ExtraLow, ExtraHigh uint64
	MinResolution       float64
}

// Key is `metric{k=v,...}` with sorted labels.
func Key(metric string, labels []Label) string {
	kv := make([]string, 0, len(labels))
	for _, l := range labels {
		kv = append(kv, l.Name+"="+l.Value)
	}
	sort.Strings(kv)
	return metric + "{" + strings.Join(kv, ",") + "}"
}

// Totals adds up the series of the pushes.
func Totals(sets []MetricSet) map[string]*Total {
	out := map[string]*Total{}
	for _, ms := range sets {
		for _, m := range ms.Metrics {
			for _, ts := range m.TimeSeries {
				k := Key(m.Name, ts.Labels)
				t := out[k]
				if t == nil {
					t = &Total{Type: m.Type, Min: math.Inf(1), Max: math.Inf(-1), Buckets: map[uint32]uint64{}}
					out[k] = t
				}
				t.add(ts)
			}
		}
	}
	return out
}

func (t *Total) add(ts TimeSeries) {
	for _, s := range []*Samples{ts.CounterSamples, ts.GaugeSamples, ts.RateSamples, ts.TrendHdrSamples} {
		if s == nil {
			continue
		}
		for _, v := range s.Values {
			switch {
			case ts.CounterSamples != nil:
				t.Sum += v.Value
			case ts.RateSamples != nil:
				t.Nonzero += uint64(v.NonzeroCount)
				t.Count += uint64(v.TotalCount)
			case ts.GaugeSamples != nil:
				t.Count += uint64(v.Count)
				t.Min, t.Max = math.Min(t.Min, v.Min), math.Max(t.Max, v.Max)
			default:
				t.Count += uint64(v.Count)
				t.Sum += v.Sum
				t.Min, t.Max = math.Min(t.Min, v.MinValue), math.Max(t.Max, v.MaxValue)
				t.MinResolution = v.MinResolution
				if v.ExtraLowValuesCounter != nil {
					t.ExtraLow += uint64(*v.ExtraLowValuesCounter)
				}
				if v.ExtraHighValuesCounter != nil {
					t.ExtraHigh += uint64(*v.ExtraHighValuesCounter)
				}
				idx, k := uint32(0), 0
				for i, sp := range v.Spans {
					if i == 0 {
						idx = sp.Offset
					} else {
						idx += sp.Offset
					}
					for j := uint32(0); j < sp.Length && k < len(v.Counters); j++ {
						t.Buckets[idx] += uint64(v.Counters[k])
						idx++
						k++
					}
				}
			}
		}
	}
}
