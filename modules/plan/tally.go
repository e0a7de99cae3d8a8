package plan

import (
	"sort"
	"time"
)

// counter is one stream of counted things (requests of an op, frames of a
// kind, bytes): the total and the count in each simulated minute, so the
// peak minute can be told from the mean.
type counter struct {
	total   float64
	minutes []float64
}

func (c *counter) add(at time.Duration, n float64) {
	c.total += n
	m := int(at / time.Minute)
	if m < 0 {
		m = 0
	}
	for len(c.minutes) <= m {
		c.minutes = append(c.minutes, 0)
	}
	c.minutes[m] += n
}

// peakMinute is the largest count in one whole or partial minute.
func (c *counter) peakMinute() float64 {
	p := 0.0
	for _, v := range c.minutes {
		p = max(p, v)
	}
	return p
}

// gauge is a level over time (open connections, subscriptions): its
// time-weighted mean and its peak.
type gauge struct {
	level, peak float64
	since       time.Duration
	area        float64 // ∫ level dt, in level·ns
	// log, when on, keeps every change, so the gauges of several shards
	// can be summed exactly (merge.go).
	logOn bool
	log   []gaugeDelta
}

type gaugeDelta struct {
	at time.Duration
	d  float64
}

func (g *gauge) add(at time.Duration, d float64) {
	g.area += g.level * float64(at-g.since)
	g.since = at
	g.level += d
	g.peak = max(g.peak, g.level)
	if g.logOn {
		g.log = append(g.log, gaugeDelta{at, d})
	}
}

func (g *gauge) mean(end time.Duration) float64 {
	if end <= 0 {
		return 0
	}
	return (g.area + g.level*float64(end-g.since)) / float64(end)
}

// tally holds every count of one simulation, keyed by name within a group
// (ops, endpoints, event kinds, ...).
type tally struct {
	groups map[string]map[string]*counter
}

func newTally() *tally { return &tally{groups: map[string]map[string]*counter{}} }

func (t *tally) add(group, key string, at time.Duration, n float64) {
	t.counter(group, key).add(at, n)
}

// counter is the counter of (group, key), created on first use; hot paths
// keep it rather than look it up per event.
func (t *tally) counter(group, key string) *counter {
	g := t.groups[group]
	if g == nil {
		g = map[string]*counter{}
		t.groups[group] = g
	}
	c := g[key]
	if c == nil {
		c = &counter{}
		g[key] = c
	}
	return c
}

func (t *tally) rows(group string, dur time.Duration) []Rate {
	var out []Rate
	for k, c := range t.groups[group] {
		out = append(out, rateOf(k, c, dur))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func rateOf(name string, c *counter, dur time.Duration) Rate {
	r := Rate{Name: name, Count: c.total}
	if dur > 0 {
		r.PerSec = c.total / dur.Seconds()
	}
	span := min(dur, time.Minute).Seconds()
	if span > 0 {
		r.PeakMinutePerSec = c.peakMinute() / span
	}
	return r
}
