package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// StatKind is an aggregation read from a sink.
type StatKind uint8

// Aggregations understood by thresholds and summaries.
const (
	StatCount StatKind = iota + 1 // Counter: sum; Trend: number of values
	StatRate                      // Counter: sum per second; Rate: non-zero share
	StatValue                     // Gauge: last value
	StatAvg
	StatMin
	StatMax
	StatMed
	StatPercentile
)

// Stat is a parsed aggregation such as `avg` or `p(99.9)`.
type Stat struct {
	Kind StatKind
	// P is the percentile (0..100) for StatPercentile.
	P float64
	// Name is the spelling as written (`p(99.9)`), used as a summary key.
	Name string
}

// ParseStat parses count, rate, value, avg, min, max, med or p(N) with
// 0 <= N <= 100 (decimals allowed).
func ParseStat(s string) (Stat, error) {
	switch s {
	case "count":
		return Stat{Kind: StatCount, Name: s}, nil
	case "rate":
		return Stat{Kind: StatRate, Name: s}, nil
	case "value":
		return Stat{Kind: StatValue, Name: s}, nil
	case "avg":
		return Stat{Kind: StatAvg, Name: s}, nil
	case "min":
		return Stat{Kind: StatMin, Name: s}, nil
	case "max":
		return Stat{Kind: StatMax, Name: s}, nil
	case "med":
		return Stat{Kind: StatMed, Name: s}, nil
	}
	if strings.HasPrefix(s, "p(") && strings.HasSuffix(s, ")") {
		p, err := strconv.ParseFloat(s[2:len(s)-1], 64)
		if err != nil || p < 0 || p > 100 || p != p {
			return Stat{}, fmt.Errorf("invalid percentile %q: want p(N) with 0 <= N <= 100", s)
		}
		return Stat{Kind: StatPercentile, P: p, Name: s}, nil
	}
	return Stat{}, fmt.Errorf("unknown aggregation %q", s)
}

// AllowedFor reports whether a threshold may use this aggregation on a
// metric of type t: Counter count/rate, Gauge value, Rate rate, Trend
// avg/min/max/med/p(N).
func (s Stat) AllowedFor(t Type) bool {
	switch t {
	case Counter:
		return s.Kind == StatCount || s.Kind == StatRate
	case Gauge:
		return s.Kind == StatValue
	case Rate:
		return s.Kind == StatRate
	case Trend:
		switch s.Kind {
		case StatAvg, StatMin, StatMax, StatMed, StatPercentile:
			return true
		}
	}
	return false
}

// ParseTrendStats parses a --summary-trend-stats list: avg, min, med, max,
// count and p(N).
func ParseTrendStats(names []string) ([]Stat, error) {
	out := make([]Stat, 0, len(names))
	for _, n := range names {
		st, err := ParseStat(strings.TrimSpace(n))
		if err != nil || (st.Kind != StatCount && !st.AllowedFor(Trend)) {
			return nil, fmt.Errorf("summary trend stat %q: allowed are avg, min, med, max, count and p(N)", n)
		}
		out = append(out, st)
	}
	return out, nil
}

// DefaultTrendStats returns k6's default summaryTrendStats.
func DefaultTrendStats() []string { return []string{"avg", "min", "med", "max", "p(90)", "p(95)"} }
