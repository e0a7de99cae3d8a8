package scenario

import (
	"fmt"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/engine/thresholds"
)

// Capacity is [capacity]: how `buzzload capacity` searches the number of
// people the deployment holds at its service level (issue 44,
// modules/capacity). People count humans and agents together (the hot
// thread's authors stay as the file has them); a probe scales the file's
// population to them in its proportions.
type Capacity struct {
	StartUsers int     `toml:"start_users"` // the first probe's people (default 10)
	MaxUsers   int     `toml:"max_users"`   // never probe above (default 100000)
	Resolution float64 `toml:"resolution"`  // bisect until (fail − pass)/fail ≤ this (default 0.05)
	MaxMinutes float64 `toml:"max_minutes"` // the search's time budget (default 30)
	Repeats    int     `toml:"repeats"`     // searches of the edge for the 95 % interval (default 3)
	Growth     float64 `toml:"growth"`      // the rising phase's factor (default 2)
	RampSecs   float64 `toml:"ramp_secs"`   // a probe's ramp to its people (default 10)
	SettleSecs float64 `toml:"settle_secs"` // then not judged (default 10)
	ProbeSecs  float64 `toml:"probe_secs"`  // then judged (default 30)
	// SLO is the service level in k6 threshold syntax on buzzload's
	// metrics, e.g. {"buzz_op_duration{op:deliver}" = ["p(99)<500"],
	// "buzz_op_failed" = ["rate<0.01"], "buzz_ledger_reach" = ["rate>=0.999"]};
	// empty: the [abort] limits (every operation's p99 and error rate).
	SLO map[string][]string `toml:"slo"`
}

// Capacity defaults.
const (
	DefaultCapacityStart      = 10
	DefaultCapacityMax        = 100000
	DefaultCapacityResolution = 0.05
	DefaultCapacityMinutes    = 30
	DefaultCapacityRepeats    = 3
	DefaultCapacityGrowth     = 2
	DefaultCapacityRampSecs   = 10
	DefaultCapacitySettleSecs = 10
	DefaultCapacityProbeSecs  = 30
)

func defaultCapacity() Capacity {
	return Capacity{StartUsers: DefaultCapacityStart, MaxUsers: DefaultCapacityMax, Resolution: DefaultCapacityResolution,
		MaxMinutes: DefaultCapacityMinutes, Repeats: DefaultCapacityRepeats, Growth: DefaultCapacityGrowth,
		RampSecs: DefaultCapacityRampSecs, SettleSecs: DefaultCapacitySettleSecs, ProbeSecs: DefaultCapacityProbeSecs}
}

// SLOMetrics are the metrics a [capacity].slo key may name.
var SLOMetrics = []string{"buzz_op_duration", "buzz_op_failed", "buzz_ledger_reach"}

// SLOKeys are the slo's keys in order.
func (c Capacity) SLOKeys() []string {
	ks := make([]string, 0, len(c.SLO))
	for k := range c.SLO {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ParseSLOKey splits `metric{op:name}` into the metric and the op ("" for
// every operation).
func ParseSLOKey(key string) (metric, op string, err error) {
	metric, rest, tagged := strings.Cut(key, "{")
	if !tagged {
		return metric, "", nil
	}
	tag, ok := strings.CutSuffix(rest, "}")
	name, value, ok2 := strings.Cut(tag, ":")
	if !ok || !ok2 || strings.TrimSpace(name) != "op" || strings.TrimSpace(value) == "" {
		return "", "", fmt.Errorf("%q: the only tag is op, as in buzz_op_duration{op:deliver}", key)
	}
	return metric, strings.TrimSpace(value), nil
}

func (s *Scenario) validateCapacity(c *checker) {
	cp := s.Capacity
	c.intAtLeast("capacity.start_users", cp.StartUsers, 1)
	c.intAtLeast("capacity.max_users", cp.MaxUsers, 1)
	if cp.MaxUsers < cp.StartUsers {
		c.add("capacity.max_users", "%d is below start_users %d", cp.MaxUsers, cp.StartUsers)
	}
	if cp.Resolution <= 0 || cp.Resolution >= 1 {
		c.add("capacity.resolution", "%s: want a fraction above 0 and below 1", num(cp.Resolution))
	}
	c.positive("capacity.max_minutes", cp.MaxMinutes, false)
	c.intRange("capacity.repeats", cp.Repeats, 1, 20, "20")
	if cp.Growth <= 1 {
		c.add("capacity.growth", "%s: want a factor above 1", num(cp.Growth))
	}
	c.floatAtLeast("capacity.ramp_secs", cp.RampSecs, 0, true)
	c.floatAtLeast("capacity.settle_secs", cp.SettleSecs, 0, true)
	c.positive("capacity.probe_secs", cp.ProbeSecs, true)
	for _, k := range cp.SLOKeys() {
		key := "capacity.slo." + k
		metric, _, err := ParseSLOKey(k)
		if err != nil {
			c.add(key, "%v", err)
			continue
		}
		known := false
		for _, m := range SLOMetrics {
			known = known || m == metric
		}
		if !known {
			c.add(key, "%q is not a metric the search judges (%s)", metric, strings.Join(SLOMetrics, ", "))
		}
		if len(cp.SLO[k]) == 0 {
			c.add(key, "has no expression")
		}
		for i, e := range cp.SLO[k] {
			x, err := thresholds.ParseExpr(e)
			if err != nil {
				c.add(fmt.Sprintf("%s[%d]", key, i), "%q: %v", e, err)
				continue
			}
			if why := sloStat(metric, x.Stat.Name); why != "" {
				c.add(fmt.Sprintf("%s[%d]", key, i), "%q: %s", e, why)
			}
		}
	}
}

// sloStat says what is wrong with a statistic on an SLO metric ("": it
// is one the report keeps).
func sloStat(metric, stat string) string {
	switch metric {
	case "buzz_op_duration":
		switch stat {
		case "p(50)", "med", "p(95)", "p(99)", "max":
			return ""
		}
		return "the report keeps p(50), med, p(95), p(99) and max of a duration"
	default:
		if stat != "rate" {
			return metric + " is judged by its rate"
		}
	}
	return ""
}
