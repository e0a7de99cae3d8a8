package jsmodule_test

import (
	"fmt"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
)

// echoModule is the shape of an extension such as k6/x/buzz: one shared Go
// value, one instance per VU.
type echoModule struct{}

type echoInstance struct {
	vu      jsmodule.VU
	latency *metrics.Metric
}

func (echoModule) NewInstance(vu jsmodule.VU) (jsmodule.Instance, error) {
	// Metrics are created while the VU's init code imports the module.
	m, err := vu.Metrics().Registry().New("echo_latency", metrics.Trend, metrics.Time)
	if err != nil {
		return nil, err
	}
	return &echoInstance{vu: vu, latency: m}, nil
}

func (e *echoInstance) Exports() jsmodule.Exports {
	return jsmodule.Exports{Named: map[string]any{"echo": e.echo}}
}

// echo returns a promise resolved from a Go goroutine: reserve a slot on the
// VU's event loop on the JS goroutine, do the work elsewhere watching the
// VU's context, and settle the promise inside the enqueued callback.
func (e *echoInstance) echo(msg string) *sobek.Promise {
	rt := e.vu.Runtime()
	p, resolve, reject := rt.NewPromise()
	enqueue := e.vu.RegisterCallback()
	ctx := e.vu.Context()
	start := time.Now()
	tags := e.vu.State().Tags.TagSet().With("op", "echo") // copy the VU's tags now
	go func() {
		select {
		case <-time.After(time.Millisecond):
			enqueue(func() error {
				e.vu.Metrics().Push(metrics.Sample{Metric: e.latency, Tags: tags, Time: time.Now(),
					Value: float64(time.Since(start)) / float64(time.Millisecond)})
				return resolve(msg)
			})
		case <-ctx.Done():
			enqueue(func() error { return reject(ctx.Err()) })
		}
	}()
	return p
}

// Example shows how cmd/buzzload/run.go adds an extension to the registry.
func Example() {
	reg := jsmodule.NewRegistry() // js.NewRegistry() starts with the built-ins
	if err := reg.Register("k6/x/echo", echoModule{}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(reg.Paths())
	// Output: [k6/x/echo]
}
