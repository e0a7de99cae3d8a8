package genmeter

import (
	"runtime"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// Watch counts the runtime's scheduling latencies into the step's cell,
// the signal that tells the generator's lag from waiting on the target
// (issue 43 L8).
func TestWatchRecordsSchedulingLatencies(t *testing.T) {
	m := New(0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Watch(time.Now(), stop, Hooks{StepOf: func(time.Duration) int { return 0 }, Gauge: func(time.Time, float64) {}, StepEnded: func(int, time.Time) {}})
	}()
	waitfor.Until(t, "scheduling latencies in step 0's cell", 10*time.Second, func() bool {
		for range 100 { // goroutines made runnable, so the runtime has latencies to count
			ch := make(chan struct{})
			go func() { close(ch) }()
			<-ch
			runtime.Gosched()
		}
		c, _ := m.Cell(0)
		return c.Sched.Total() > 0 && c.Sched.QuantileMs(0.99) > 0
	})
	close(stop)
	<-done
}
