// Package engine wires a k6-compatible run together: the script host
// (engine/jshost), the consolidated options, the executors, metrics, thresholds,
// outputs and the summary, and it decides the exit code (docs/k6-compat.md §4.5).
package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/k6http"
	"github.com/buzzload/buzzload/engine/metrics"
)

func isHTTPOption(k string) bool {
	for _, h := range k6http.OptionKeys {
		if h == k {
			return true
		}
	}
	return false
}

// Options are the non-execution options of one configuration layer (config
// file, script, environment, flags). A nil field is "not set in this layer".
// The execution options (vus, duration, iterations, stages, scenarios) are
// merged separately, as a block (engine/executor).
type Options struct {
	Tags                     map[string]string
	Thresholds               map[string]json.RawMessage
	SetupTimeout             *time.Duration
	TeardownTimeout          *time.Duration
	HandleSummaryTimeout     *time.Duration
	SummaryTrendStats        []string
	SummaryTimeUnit          *string
	NoSetup                  *bool
	NoTeardown               *bool
	SystemTags               []string
	ExecutionSegment         *string
	ExecutionSegmentSequence *string
	MinIterationDuration     *time.Duration
	Throw                    *bool
	// HTTP holds k6/http's options (k6http.OptionKeys) as given, replaced
	// key by key across layers and validated by k6http.ParseOptions.
	HTTP map[string]json.RawMessage
}

// Defaults filled in after merging (docs/k6-compat.md §8.2).
const (
	DefaultSetupTimeout         = 60 * time.Second
	DefaultTeardownTimeout      = 60 * time.Second
	DefaultHandleSummaryTimeout = 120 * time.Second
)

// DefaultSummaryTrendStats is k6's default summaryTrendStats.
var DefaultSummaryTrendStats = []string{"avg", "min", "med", "max", "p(90)", "p(95)"}

// knownOptionKeys are k6 options we accept without a warning even where we
// have nothing to do with them (HTTP, TLS, DNS, cloud ...).
var knownOptionKeys = map[string]bool{
	"vus": true, "duration": true, "iterations": true, "stages": true, "scenarios": true,
	"tags": true, "thresholds": true, "setupTimeout": true, "teardownTimeout": true,
	"handleSummaryTimeout": true, "summaryTrendStats": true, "summaryTimeUnit": true,
	"noSetup": true, "noTeardown": true, "systemTags": true, "executionSegment": true,
	"executionSegmentSequence": true, "minIterationDuration": true, "throw": true,
	"paused": true, "batch": true, "batchPerHost": true, "rps": true, "maxRedirects": true,
	"userAgent": true, "httpDebug": true, "insecureSkipTLSVerify": true, "tlsCipherSuites": true,
	"tlsVersion": true, "tlsAuth": true, "noConnectionReuse": true, "noVUConnectionReuse": true,
	"noCookiesReset": true, "discardResponseBodies": true, "blacklistIPs": true,
	"blockHostnames": true, "hosts": true, "dns": true, "ext": true,
	"cloud": true, "console": true, "consoleOutput": true, "linger": true, "noUsageReport": true,
	"compatibilityMode": true, "summaryMode": true, "noThresholds": true, "noSummary": true,
	"tlsMinVersion": true, "features": true, // k6 v2.1 (resolved by the run: load.go)
}

// ParseOptionsJSON reads one JSON layer (config file or script options).
// source names the layer in errors ("script options", "config.json").
// Unknown top-level keys come back as warnings; a wrong type is an error.
func ParseOptionsJSON(raw json.RawMessage, source string) (Options, []string, error) {
	var o Options
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return o, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return o, nil, fmt.Errorf("%s: options must be an object: %w", source, err)
	}
	var warnings, unknown []string
	var errs []error
	bad := func(key string, err error) { errs = append(errs, fmt.Errorf("%s: %s: %w", source, key, err)) }
	for k, v := range fields {
		if isJSONNull(v) {
			continue
		}
		var err error
		switch k {
		case "tags":
			err = json.Unmarshal(v, &o.Tags)
		case "thresholds":
			err = json.Unmarshal(v, &o.Thresholds)
		case "setupTimeout":
			o.SetupTimeout, err = durationJSON(v)
		case "teardownTimeout":
			o.TeardownTimeout, err = durationJSON(v)
		case "handleSummaryTimeout":
			o.HandleSummaryTimeout, err = durationJSON(v)
		case "minIterationDuration":
			o.MinIterationDuration, err = durationJSON(v)
		case "summaryTrendStats":
			err = json.Unmarshal(v, &o.SummaryTrendStats)
			if err == nil && o.SummaryTrendStats == nil {
				o.SummaryTrendStats = []string{}
			}
		case "summaryTimeUnit":
			o.SummaryTimeUnit = new(string)
			err = json.Unmarshal(v, o.SummaryTimeUnit)
		case "noSetup":
			o.NoSetup = new(bool)
			err = json.Unmarshal(v, o.NoSetup)
		case "noTeardown":
			o.NoTeardown = new(bool)
			err = json.Unmarshal(v, o.NoTeardown)
		case "throw":
			o.Throw = new(bool)
			err = json.Unmarshal(v, o.Throw)
		case "systemTags":
			err = json.Unmarshal(v, &o.SystemTags)
		case "executionSegment":
			o.ExecutionSegment, err = stringJSON(v)
		case "executionSegmentSequence":
			o.ExecutionSegmentSequence, err = stringJSON(v)
		default:
			if k == "dns" {
				// Checked here: layers merge it field by field (mergeDNS),
				// so a bad value a higher layer covers is still an error.
				var c dnsresolve.Config
				if err = json.Unmarshal(v, &c); err == nil {
					_, err = c.Settings()
				}
			}
			if isHTTPOption(k) {
				if o.HTTP == nil {
					o.HTTP = map[string]json.RawMessage{}
				}
				o.HTTP[k] = v
				break
			}
			if !knownOptionKeys[k] {
				unknown = append(unknown, k)
			}
		}
		if err != nil {
			bad(k, err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		warnings = append(warnings, fmt.Sprintf("There were unknown fields in the %s: %s", source, strings.Join(unknown, ", ")))
	}
	if len(errs) > 0 {
		sortErrs(errs)
		return Options{}, warnings, errors.Join(errs...)
	}
	return o, warnings, nil
}

func sortErrs(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

func isJSONNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// stringJSON accepts a string (or a number, written as text).
func stringJSON(v json.RawMessage) (*string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return &s, nil
	}
	var f json.Number
	if err := json.Unmarshal(v, &f); err != nil {
		return nil, errors.New("want a string")
	}
	s = f.String()
	return &s, nil
}

// durationJSON reads a k6 duration: a string in Go syntax with an optional
// day prefix ("1d2h"), or a number / numeric string of milliseconds.
func durationJSON(v json.RawMessage) (*time.Duration, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return nil, errors.New("want a duration string or a number of milliseconds")
		}
		d := time.Duration(f * float64(time.Millisecond))
		return &d, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

var dayPrefix = regexp.MustCompile(`^(\d+)d`)

// ParseDuration parses "1d2h30m", "1.5s" or a bare number of milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	var days time.Duration
	if m := dayPrefix.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		days = time.Duration(n) * 24 * time.Hour
		s = s[len(m[0]):]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return days + d, nil
}

// Apply lays higher over o field by field; maps and lists are replaced
// whole, as in k6 (§1.11, §8.2).
func (o Options) Apply(higher Options) Options {
	if higher.Tags != nil {
		o.Tags = higher.Tags
	}
	if higher.Thresholds != nil {
		o.Thresholds = higher.Thresholds
	}
	if higher.SetupTimeout != nil {
		o.SetupTimeout = higher.SetupTimeout
	}
	if higher.TeardownTimeout != nil {
		o.TeardownTimeout = higher.TeardownTimeout
	}
	if higher.HandleSummaryTimeout != nil {
		o.HandleSummaryTimeout = higher.HandleSummaryTimeout
	}
	if higher.SummaryTrendStats != nil {
		o.SummaryTrendStats = higher.SummaryTrendStats
	}
	if higher.SummaryTimeUnit != nil {
		o.SummaryTimeUnit = higher.SummaryTimeUnit
	}
	if higher.NoSetup != nil {
		o.NoSetup = higher.NoSetup
	}
	if higher.NoTeardown != nil {
		o.NoTeardown = higher.NoTeardown
	}
	if higher.SystemTags != nil {
		o.SystemTags = higher.SystemTags
	}
	if higher.ExecutionSegment != nil {
		o.ExecutionSegment = higher.ExecutionSegment
	}
	if higher.ExecutionSegmentSequence != nil {
		o.ExecutionSegmentSequence = higher.ExecutionSegmentSequence
	}
	if higher.MinIterationDuration != nil {
		o.MinIterationDuration = higher.MinIterationDuration
	}
	if higher.Throw != nil {
		o.Throw = higher.Throw
	}
	if len(higher.HTTP) > 0 {
		m := make(map[string]json.RawMessage, len(o.HTTP)+len(higher.HTTP))
		for k, v := range o.HTTP {
			m[k] = v
		}
		for k, v := range higher.HTTP {
			if k == "localIPs" && bytes.Equal(bytes.TrimSpace(v), []byte(`""`)) {
				continue // k6 reads an empty localIPs as not set, in every layer: a lower one's stays
			}
			if k == "dns" {
				// k6 merges dns's ttl, select and policy one by one.
				v = mergeDNS(o.HTTP[k], v)
			}
			m[k] = v
		}
		o.HTTP = m
	}
	return o
}

// mergeDNS lays the dns option higher over lower field by field; a layer
// that does not parse is kept as given, for Resolve to report.
func mergeDNS(lower, higher json.RawMessage) json.RawMessage {
	var lo, hi dnsresolve.Config
	if lower == nil || json.Unmarshal(lower, &lo) != nil || json.Unmarshal(higher, &hi) != nil {
		return higher
	}
	b, err := json.Marshal(lo.Apply(hi))
	if err != nil {
		return higher
	}
	return b
}

// Resolved are the final option values after defaults.
type Resolved struct {
	Tags                     map[string]string
	Thresholds               map[string]json.RawMessage
	SetupTimeout             time.Duration
	TeardownTimeout          time.Duration
	HandleSummaryTimeout     time.Duration
	SummaryTrendStats        []string
	SummaryTimeUnit          string
	NoSetup, NoTeardown      bool
	SystemTags               []string
	ExecutionSegment         string
	ExecutionSegmentSequence string
	MinIterationDuration     time.Duration
	Throw                    bool
	HTTP                     map[string]json.RawMessage
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Resolve fills in the defaults and validates the values.
func (o Options) Resolve() (Resolved, error) {
	r := Resolved{
		Tags:                     o.Tags,
		Thresholds:               o.Thresholds,
		SetupTimeout:             deref(o.SetupTimeout, DefaultSetupTimeout),
		TeardownTimeout:          deref(o.TeardownTimeout, DefaultTeardownTimeout),
		HandleSummaryTimeout:     deref(o.HandleSummaryTimeout, DefaultHandleSummaryTimeout),
		SummaryTrendStats:        o.SummaryTrendStats,
		SummaryTimeUnit:          deref(o.SummaryTimeUnit, ""),
		NoSetup:                  deref(o.NoSetup, false),
		NoTeardown:               deref(o.NoTeardown, false),
		SystemTags:               o.SystemTags,
		ExecutionSegment:         deref(o.ExecutionSegment, ""),
		ExecutionSegmentSequence: deref(o.ExecutionSegmentSequence, ""),
		MinIterationDuration:     deref(o.MinIterationDuration, 0),
		Throw:                    deref(o.Throw, false),
		HTTP:                     o.HTTP,
	}
	if r.SummaryTrendStats == nil {
		r.SummaryTrendStats = append([]string(nil), DefaultSummaryTrendStats...)
	}
	if r.SystemTags == nil {
		r.SystemTags = metrics.DefaultSystemTags()
	}
	var errs []error
	if len(r.HTTP) > 0 {
		raw, err := json.Marshal(r.HTTP)
		if err == nil {
			_, err = k6http.ParseOptions(raw)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range r.SummaryTrendStats {
		if !validTrendStat(s) {
			errs = append(errs, fmt.Errorf("summaryTrendStats: %q is not one of avg, min, med, max, count, p(N)", s))
		}
	}
	switch r.SummaryTimeUnit {
	case "", "s", "ms", "us":
	default:
		errs = append(errs, fmt.Errorf("summaryTimeUnit: %q is not one of s, ms, us", r.SummaryTimeUnit))
	}
	for k, v := range r.Tags {
		if v == "" {
			errs = append(errs, fmt.Errorf("tags: tag %q has an empty value", k))
		}
	}
	for name, d := range map[string]time.Duration{"setupTimeout": r.SetupTimeout, "teardownTimeout": r.TeardownTimeout, "handleSummaryTimeout": r.HandleSummaryTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be above 0, got %s", name, d))
		}
	}
	if len(errs) > 0 {
		sortErrs(errs)
		return Resolved{}, errors.Join(errs...)
	}
	return r, nil
}

var percentileRE = regexp.MustCompile(`^p\((\d+(\.\d+)?)\)$`)

func validTrendStat(s string) bool {
	switch s {
	case "avg", "min", "med", "max", "count":
		return true
	}
	m := percentileRE.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	return err == nil && f >= 0 && f <= 100
}

// MarshalJSON writes the resolved options the way test.options and the
// handleSummary data show them (k6 JSON names).
func (r Resolved) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) string { return d.String() }
	m := map[string]any{
		"tags":                 r.Tags,
		"setupTimeout":         ms(r.SetupTimeout),
		"teardownTimeout":      ms(r.TeardownTimeout),
		"handleSummaryTimeout": ms(r.HandleSummaryTimeout),
		"summaryTrendStats":    r.SummaryTrendStats,
		"summaryTimeUnit":      nilIfEmpty(r.SummaryTimeUnit),
		"noSetup":              r.NoSetup,
		"noTeardown":           r.NoTeardown,
		"systemTags":           r.SystemTags,
		"throw":                r.Throw,
	}
	for k, v := range r.HTTP {
		m[k] = v
	}
	if r.Thresholds != nil {
		m["thresholds"] = r.Thresholds
	} else {
		m["thresholds"] = nil
	}
	if r.ExecutionSegment != "" {
		m["executionSegment"] = r.ExecutionSegment
	} else {
		m["executionSegment"] = nil
	}
	if r.ExecutionSegmentSequence != "" {
		m["executionSegmentSequence"] = r.ExecutionSegmentSequence
	} else {
		m["executionSegmentSequence"] = nil
	}
	return json.Marshal(m)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
