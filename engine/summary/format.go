package summary

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
)

// trimZeros removes trailing zeros (and a trailing point) of a decimal.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// truncTo truncates v to d decimals (k6 truncates rather than rounds).
func truncTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	// A small epsilon keeps 0.29*100 (28.999999…) from truncating to 28.
	return math.Trunc(v*p+math.Copysign(1e-9, v)) / p
}

// formatPlain is toFixed(6) with trailing zeros removed.
func formatPlain(v float64) string {
	return trimZeros(strconv.FormatFloat(v, 'f', 6, 64))
}

// formatPercent is a Rate: truncated to 2 decimals, then `%`.
func formatPercent(ratio float64) string {
	return strconv.FormatFloat(truncTo(ratio*100, 2), 'f', 2, 64) + "%"
}

// formatData is bytes in base-1000 units: `793 B`, `8.3 kB`, `12 MB`.
func formatData(v float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	if math.Abs(v) < 10 {
		return formatPlain(v) + " B"
	}
	e := int(math.Floor(math.Log(math.Abs(v)) / math.Log(1000)))
	if e >= len(units) {
		e = len(units) - 1
	}
	if e < 0 {
		e = 0
	}
	x := math.Floor(v/math.Pow(1000, float64(e))*10+0.5) / 10
	if x < 10 {
		return strconv.FormatFloat(x, 'f', 1, 64) + " " + units[e]
	}
	// JavaScript's toFixed(0) rounds halves up where Go's 'f' rounds to even.
	return strconv.FormatFloat(math.Floor(x+0.5), 'f', 0, 64) + " " + units[e]
}

// formatDuration is a time in milliseconds, humanized (timeUnit "") or fixed
// to 2 decimals in s, ms or us.
func formatDuration(ms float64, timeUnit string) string {
	switch timeUnit {
	case "s":
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + "s"
	case "ms":
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	case "us":
		return strconv.FormatFloat(ms*1000, 'f', 2, 64) + "µs"
	}
	if ms == 0 {
		return "0s"
	}
	neg := ""
	if ms < 0 {
		neg, ms = "-", -ms
	}
	switch {
	case ms < 0.001:
		return neg + strconv.FormatFloat(math.Floor(ms*1e6), 'f', 0, 64) + "ns"
	case ms < 1:
		return neg + trimZeros(strconv.FormatFloat(truncTo(ms*1000, 2), 'f', 2, 64)) + "µs"
	case ms < 1000:
		return neg + trimZeros(strconv.FormatFloat(truncTo(ms, 2), 'f', 2, 64)) + "ms"
	case ms < 60000:
		return neg + strconv.FormatFloat(truncTo(ms/1000, 2), 'f', 2, 64) + "s"
	}
	total := int64(ms / 1000)
	h, m, s := total/3600, (total%3600)/60, total%60
	if h > 0 {
		return fmt.Sprintf("%s%dh%dm%ds", neg, h, m, s)
	}
	return fmt.Sprintf("%s%dm%ds", neg, m, s)
}

// formatValue humanizes a value of a metric's value type.
func formatValue(v float64, contains metrics.ValueType, timeUnit string) string {
	switch contains {
	case metrics.Time:
		return formatDuration(v, timeUnit)
	case metrics.Data:
		return formatData(v)
	}
	return formatPlain(v)
}

// formatStat formats one aggregation of a metric the way summary lines do.
func formatStat(st metrics.Stat, v float64, typ metrics.Type, contains metrics.ValueType, timeUnit string) string {
	if st.Kind == metrics.StatCount && typ == metrics.Trend {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if typ == metrics.Rate && st.Kind == metrics.StatRate {
		return formatPercent(v)
	}
	return formatValue(v, contains, timeUnit)
}
