package executor

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a k6 "extended" duration as scripts and JSON configs
// give it: a Go duration string with an optional day prefix ("1d2h", "1m30s",
// "500ms"), or a number or numeric string taken as milliseconds.
//
// A value past time.Duration's range (about 292 years) is an error, never a
// wrapped value: "1e300", "999999999999d" and "106751d23h59m59s" all fail.
func ParseDuration(in string) (time.Duration, error) {
	s := strings.TrimSpace(in)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		return msToDuration(ms)
	}
	var days time.Duration
	rest := s
	if before, after, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseInt(before, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("%q is not a valid duration", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		if after == "" {
			return days, nil
		}
		rest = after
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("%q is not a valid duration (use e.g. \"1m30s\", \"500ms\" or milliseconds)", s)
	}
	if days > 0 && d < 0 {
		return 0, fmt.Errorf("%q is not a valid duration", s)
	}
	if d > math.MaxInt64-days {
		return 0, fmt.Errorf("%q is out of range (at most %v)", s, time.Duration(math.MaxInt64))
	}
	return days + d, nil
}

func msToDuration(ms float64) (time.Duration, error) {
	// float64(MaxInt64) rounds up to 2^63, so the product must stay below it:
	// converting 2^63 to int64 wraps to the most negative duration.
	ns := ms * float64(time.Millisecond)
	if math.IsNaN(ns) || math.IsInf(ns, 0) || math.Abs(ns) >= float64(math.MaxInt64) {
		return 0, fmt.Errorf("%v ms is out of range", ms)
	}
	return time.Duration(ns), nil
}

// parseDurationJSON accepts a JSON string or number (milliseconds).
func parseDurationJSON(raw json.RawMessage) (time.Duration, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("not a duration: %w", err)
	}
	switch x := v.(type) {
	case string:
		return ParseDuration(x)
	case float64:
		return msToDuration(x)
	default:
		return 0, fmt.Errorf("%s is not a duration (want a string like \"30s\" or milliseconds)", raw)
	}
}

// formatDuration prints like Go's time.Duration, as k6's banner does ("10m0s").
func formatDuration(d time.Duration) string { return d.String() }
