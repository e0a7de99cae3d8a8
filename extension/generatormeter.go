package extension

import (
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/genmeter"
)

// genOut is where the generator's meter (modules/genmeter) writes
// buzz_generator_cpu and buzz_generator_saturated: a VU's push, the first
// one attached.
type genOut struct {
	mu   sync.Mutex
	push func(...metrics.Sample)
	met  *metricSet
	tags metrics.TagSet
}

// attach gives the meter a VU's push (the first one wins). The process's
// CPU is no scenario's, so its samples carry the VU's tags without
// "scenario".
func (g *genOut) attach(push func(...metrics.Sample), met *metricSet, tags metrics.TagSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.push == nil && met != nil {
		g.push, g.met, g.tags = push, met, tags.Without("scenario")
	}
}

func (g *genOut) get() (func(...metrics.Sample), *metricSet, metrics.TagSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.push, g.met, g.tags
}

// watchGenerator runs the meter until stop: buzz_generator_cpu every
// second while the run goes, buzz_generator_saturated{step} as each step
// ends.
func (l *loaded) watchGenerator(start time.Time, stop <-chan struct{}) {
	l.gen.Watch(start, stop, genmeter.Hooks{
		StepOf:    l.stepIndex,
		StepEnded: l.pushSaturation,
		Gauge: func(at time.Time, share float64) {
			if push, met, tags := l.genOut.get(); push != nil {
				push(metrics.Sample{Metric: met.generatorCPU, Tags: tags, Time: at, Value: share})
			}
		},
	})
}
