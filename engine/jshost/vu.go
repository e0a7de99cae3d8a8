package jshost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/eventloop"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
)

// VU is one virtual user: a sobek runtime, its event loop and timers. All
// methods must be called from one goroutine at a time (the VU's).
type VU struct {
	b      *Bundle
	rt     *sobek.Runtime
	loop   *eventloop.Loop
	timers *timers
	id     uint64
	idTest uint64
	ctx    context.Context
	// buf is the VU's own sample buffer: VUs sharing the collector's
	// shards contended on them (dropped arrival-rate starts at 30k
	// iterations/s). It holds the collector's batch size of samples, which
	// the runner keeps small (engine.SampleBatch) for small idle VUs.
	buf     *metrics.Buffer
	stags   sampleTags // memo of custom samples' tag sets (sampletags.go)
	state   *jsmodule.State
	initEnv *jsmodule.InitEnv

	modStack []sobek.ModuleRecord
	rejected []*sobek.Promise

	// intMu guards running so that an interrupt from a context's AfterFunc
	// never lands after the call it was meant for has finished.
	intMu   sync.Mutex
	running bool

	sys         SystemTags
	watchCtx    context.Context
	watchBase   context.Context
	watchCancel context.CancelFunc
	watchStop   func() bool
	execFn      sobek.Callable

	setup        *SetupData
	setupDecoded bool
	setupVal     sobek.Value

	// Scenario activation (k6/execution).
	scenario       *Scenario
	exec           string
	iterInScenario int64
	iter           Iteration
	env            map[string]string
	envVal         *sobek.Object // __ENV

	// BytesSent and BytesReceived are added to by modules that do network
	// I/O; the VU emits data_sent/data_received deltas after each call.
	BytesSent, BytesReceived atomic.Int64
}

var _ jsmodule.VU = (*VU)(nil)

// Runtime implements jsmodule.VU.
func (v *VU) Runtime() *sobek.Runtime { return v.rt }

// Context implements jsmodule.VU.
func (v *VU) Context() context.Context { return v.ctx }

// RegisterCallback implements jsmodule.VU.
func (v *VU) RegisterCallback() eventloop.Enqueue { return v.loop.RegisterCallback() }

// State implements jsmodule.VU.
func (v *VU) State() *jsmodule.State { return v.state }

// InitEnv implements jsmodule.VU.
func (v *VU) InitEnv() *jsmodule.InitEnv { return v.initEnv }

// Metrics implements jsmodule.VU.
func (v *VU) Metrics() jsmodule.Metrics { return v }

// Registry implements jsmodule.Metrics.
func (v *VU) Registry() *metrics.Registry { return v.b.cfg.Collector.Registry() }

// Push implements jsmodule.Metrics. It may be called from any goroutine
// (connection readers push their results): the samples go into the VU's
// buffer under one lock, in order.
func (v *VU) Push(samples ...metrics.Sample) { v.buf.AddAll(samples) }

// PushShared records samples like Push, for producers that push often from
// goroutines other than the VU's (a connection reader recording each
// delivered event): they go into one of the bundle's shared buffers, the
// one the caller's P last used (sharedBuffers), instead of the VU's own.
// With hundreds of VUs read by a few epoll loops the VU's buffer is a cold
// cache line on the reader's core at every push: its lock and append were
// ~0.75 µs of a delivered event's ~18 µs in a 500-human fan-out run's
// profile. The samples of one call stay in order; against other calls
// (this VU's or any other's) they may be ingested in another order, as
// samples of different goroutines always are. Close flushes the shared
// buffers as it flushes the VU's own.
func (v *VU) PushShared(samples ...metrics.Sample) { v.b.pushBufs.add(samples) }

// ScenarioContext implements jsmodule.VU.
func (v *VU) ScenarioContext() context.Context {
	if v.watchBase != nil {
		return v.watchBase
	}
	return v.ctx
}

// TestOptions implements jsmodule.VU.
func (v *VU) TestOptions() []byte {
	if raw := v.b.mergedOptions.Load(); raw != nil {
		return *raw
	}
	return nil
}

// AddDataTransfer implements jsmodule.VU.
func (v *VU) AddDataTransfer(sent, received int64) {
	v.BytesSent.Add(sent)
	v.BytesReceived.Add(received)
}

// ID is __VU.
func (v *VU) ID() uint64 { return v.id }

// Logger is the run's logger.
func (v *VU) Logger() *Logger { return v.b.cfg.Logger }

// Close releases the VU's bookkeeping in the bundle.
func (v *VU) Close() {
	v.unwatch()
	v.b.vus.Delete(v.rt)
	v.buf.Close()
	v.b.pushBufs.flush()
}

func (b *Bundle) newVU(ctx context.Context, id, idInTest uint64) (*VU, error) {
	rt := sobek.New()
	rt.SetFieldNameMapper(sobek.TagFieldNameMapper("js", true))
	v := &VU{b: b, rt: rt, id: id, idTest: idInTest, ctx: ctx, env: b.cfg.Env, buf: b.cfg.Collector.NewBuffer()}
	v.loop = eventloop.New(v.checkRejections)
	v.timers = newTimers(v)
	rt.SetPromiseRejectionTracker(v.trackRejection)
	rt.SetFinalImportMeta(v.importMeta)
	b.vus.Store(rt, v)
	if err := v.setGlobals(); err != nil {
		v.Close()
		return nil, err
	}
	b.inits.Add(1)
	if err := v.init(ctx); err != nil {
		v.Close()
		return nil, err
	}
	// Every init after the consolidation (the first init, which read the
	// script's own options, came before it): VUs, and setup, teardown and
	// handleSummary, as in k6.
	if doc := b.mergedDoc.Load(); doc != nil {
		v.overwriteOptions(doc)
	}
	return v, nil
}

func (v *VU) setGlobals() error {
	v.envVal = v.envObject(v.env, v.b.envKeys)
	return v.rt.GlobalObject().SetPrototype(v.rt.NewDynamicObject(&globals{v: v}))
}

// importMeta fills import.meta: url, and resolve(specifier) relative to the
// module (a URL string, as in browsers and k6).
func (v *VU) importMeta(o *sobek.Object, m sobek.ModuleRecord) {
	u := v.b.loader.urlOf(m)
	if u == nil {
		return
	}
	_ = o.Set("url", displayURL(u))
	_ = o.Set("resolve", func(spec string) string {
		if spec == "k6" || strings.HasPrefix(spec, "k6/") {
			return spec
		}
		r, err := v.b.loader.resolveURL(u, spec)
		if err != nil {
			v.throw(err)
		}
		return displayURL(r)
	})
}

func (v *VU) envObject(env map[string]string, keys []string) *sobek.Object {
	if v.b.cfg.FreezeEnv {
		o := v.rt.NewObject()
		for _, k := range keys {
			_ = o.DefineDataProperty(k, v.rt.ToValue(env[k]), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_TRUE)
		}
		if freeze, ok := sobek.AssertFunction(v.rt.Get("Object").ToObject(v.rt).Get("freeze")); ok {
			_, _ = freeze(sobek.Undefined(), o)
		}
		return o
	}
	return v.rt.NewDynamicObject(&envView{rt: v.rt, base: env, keys: keys})
}

// init evaluates the main module in this runtime.
func (v *VU) init(ctx context.Context) error {
	v.initEnv = &jsmodule.InitEnv{Open: v.openBytes}
	defer func() { v.initEnv = nil }()
	var p *sobek.Promise
	err := v.call(ctx, func() error {
		var cm sobek.CyclicModuleRecord
		switch r := v.b.main.(type) {
		case sobek.CyclicModuleRecord:
			cm = r
		default:
			return fmt.Errorf("main module has unexpected type %T", r)
		}
		p = v.rt.CyclicModuleRecordEvaluate(cm, v.b.loader.resolve)
		return nil
	})
	if p != nil {
		switch p.State() {
		case sobek.PromiseStateRejected:
			err = valueError(p.Result())
		case sobek.PromiseStatePending:
			if err == nil {
				err = errors.New("the script's top-level await never settled")
			}
		}
	}
	if err != nil {
		var ab *AbortError
		if errors.As(err, &ab) {
			return ab
		}
		return &ScriptError{Phase: "init", Err: err}
	}
	return nil
}
