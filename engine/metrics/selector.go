package metrics

import (
	"fmt"
	"strings"
	"time"
)

// Sample is one measurement.
type Sample struct {
	Metric *Metric
	// Tags are indexed: sub-metric selectors and grouped sinks match on them.
	Tags TagSet
	// Metadata is carried to outputs only (k6 puts vu and iter here).
	Metadata TagSet
	Time     time.Time
	Value    float64
}

// SampleConsumer receives batches of samples after they were aggregated
// (outputs implement it). The slice is only valid during the call.
type SampleConsumer interface {
	AddSamples(samples []Sample)
}

// Selector is a parsed sub-metric key such as `http_req_duration{status:200}`.
type Selector struct {
	// Name is the whole key as written; it names the sub-metric.
	Name string
	// Metric is the parent metric's name (the part before the first '{').
	Metric string
	// Suffix is the raw text between the braces ("" for a plain metric).
	Suffix string
	// Tags are the pairs a sample's tags must all contain.
	Tags TagSet
}

// IsSubmetric reports whether the key had a {...} part.
func (s Selector) IsSubmetric() bool { return s.Suffix != "" || strings.Contains(s.Name, "{") }

// Matches reports whether sample tags satisfy the selector.
func (s Selector) Matches(tags TagSet) bool { return tags.Contains(s.Tags) }

// Display is how summaries print a sub-metric under its parent: `{ k:v }`.
func (s Selector) Display() string { return "{ " + s.Suffix + " }" }

// ParseSelector parses a metric key with k6's rules: the name is cut at the
// first '{', and the key must then end with '}'. The inside is split on ',';
// each part is split at its first ':'; keys and values are trimmed of spaces
// and then of " and ' quotes. Empty parts are skipped and a part without
// ':' selects the key with an empty value. An empty inside is an error.
// A key without '{' is a plain metric name.
func ParseSelector(key string) (Selector, error) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return Selector{Name: key, Metric: key}, nil
	}
	if !strings.HasSuffix(key, "}") {
		return Selector{}, fmt.Errorf("metric key %q: a sub-metric selector must end with '}'", key)
	}
	name := key[:open]
	inner := key[open+1 : len(key)-1]
	if strings.TrimSpace(inner) == "" {
		return Selector{}, fmt.Errorf("metric key %q: the sub-metric selector of %q is empty", key, name)
	}
	var tags []Tag
	for _, part := range strings.Split(inner, ",") {
		if part == "" {
			continue
		}
		k, v, found := strings.Cut(part, ":")
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		if found {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
		}
		tags = append(tags, Tag{k, v})
	}
	return Selector{Name: key, Metric: name, Suffix: inner, Tags: NewTagSet(tags...)}, nil
}
