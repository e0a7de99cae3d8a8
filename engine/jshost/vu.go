package jshost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

	setupJSON    []byte
	setupDecoded bool
	setupVal     sobek.Value

	// Scenario activation (k6/execution).
	scenario       *Scenario
	exec           string
	iterInScenario int64
	iter           Iteration
	env            map[string]string

	// BytesSent and BytesReceived are added to by modules that do network
	// I/O; the VU emits data_sent/data_received deltas after each call.
	BytesSent, BytesReceived atomic.Int64
}

// Scenario is what k6/execution's `scenario` shows about the scenario a VU is
// active in. Progress may be nil.
type Scenario struct {
	Name      string
	Executor  string
	StartTime time.Time
	Progress  func() float64
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

// Push implements jsmodule.Metrics.
func (v *VU) Push(samples ...metrics.Sample) {
	for i := range samples {
		v.buf.Add(samples[i])
	}
}

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
	if raw := b.mergedOptions.Load(); raw != nil && id != 0 {
		v.overwriteOptions(*raw)
	}
	return v, nil
}

func (v *VU) setGlobals() error {
	rt := v.rt
	g := rt.GlobalObject()
	set := func(k string, val any) {
		if err := g.Set(k, val); err != nil {
			panic(err) // only a broken runtime fails here
		}
	}
	set("global", g) // k6's "extended" compatibility mode alias
	set("__VU", v.id)
	// __ITER is a getter: setting a global property on every iteration
	// was a fifth of an empty iteration's cost.
	_ = g.DefineAccessorProperty("__ITER", rt.ToValue(func(sobek.FunctionCall) sobek.Value {
		if v.state == nil || v.state.Iteration < 0 {
			return rt.ToValue(0)
		}
		return rt.ToValue(v.state.Iteration)
	}), nil, sobek.FLAG_TRUE, sobek.FLAG_TRUE)
	set("__ENV", v.envObject(v.env, v.b.envKeys))
	set("open", v.open)
	set("require", func(call sobek.FunctionCall) sobek.Value {
		return v.require(v.activeModule(), call.Argument(0).String())
	})
	set("console", newConsole(v))
	v.timers.install(g)
	return nil
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

// call runs first on the event loop and waits for everything it started.
// The context interrupts the runtime and clears its timers when it ends.
func (v *VU) call(ctx context.Context, first func() error) error {
	base := v.watch(ctx)
	// Each call gets its own context, cancelled when the call ends, so Go
	// work a module started (and that the script did not wait for) stops;
	// its parent is per VU, so VUs do not contend on a shared context.
	callCtx, cancel := context.WithCancel(base)
	v.ctx = callCtx
	v.intMu.Lock()
	v.running = true
	if base.Err() != nil {
		// The context ended before the call: its AfterFunc has already run.
		v.rt.Interrupt(errInterrupted)
	}
	v.intMu.Unlock()
	err := v.loop.Start(first)
	cancel()
	v.timers.clearAll()
	v.loop.WaitOnRegistered()
	v.intMu.Lock()
	v.running = false
	v.intMu.Unlock()
	v.rt.ClearInterrupt()
	v.rejected = v.rejected[:0]
	return jsError(err)
}

// watch returns the VU's own child of ctx, whose end interrupts the running
// call and releases its timers. It is kept while calls use the same
// context (all iterations of a scenario share one): deriving from a shared
// context on every iteration makes the VUs contend on its mutex.
func (v *VU) watch(ctx context.Context) context.Context {
	if ctx == v.watchCtx {
		return v.watchBase
	}
	v.unwatch()
	v.watchCtx = ctx
	v.watchBase, v.watchCancel = context.WithCancel(ctx)
	v.watchStop = context.AfterFunc(v.watchBase, v.onDone)
	return v.watchBase
}

func (v *VU) unwatch() {
	if v.watchStop != nil {
		v.watchStop()
		v.watchCancel()
		v.watchStop, v.watchCancel, v.watchCtx, v.watchBase = nil, nil, nil, nil
	}
}

func (v *VU) onDone() {
	v.timers.clearAll()
	v.intMu.Lock()
	if v.running {
		v.rt.Interrupt(errInterrupted)
	}
	v.intMu.Unlock()
}

func (v *VU) trackRejection(p *sobek.Promise, op sobek.PromiseRejectionOperation) {
	switch op {
	case sobek.PromiseRejectionReject:
		v.rejected = append(v.rejected, p)
	case sobek.PromiseRejectionHandle:
		for i, q := range v.rejected {
			if q == p {
				v.rejected = append(v.rejected[:i], v.rejected[i+1:]...)
				break
			}
		}
	}
}

func (v *VU) checkRejections() error {
	if len(v.rejected) == 0 {
		return nil
	}
	p := v.rejected[0]
	v.rejected = v.rejected[:0]
	return fmt.Errorf("Uncaught (in promise) %w", valueError(p.Result()))
}

// exportNames lists the main module's exports.
func (v *VU) exportNames() []string {
	var names []string
	switch r := v.b.main.(type) {
	case *cjsRecord:
		inst, _ := v.rt.GetModuleInstance(r).(*cjsInstance)
		if inst != nil {
			if o, ok := inst.exports.(*sobek.Object); ok {
				names = o.Keys()
			}
		}
	default:
		r.GetExportedNames(func(n []string) { names = n })
	}
	return names
}

// exportValue returns the value of an export of the main module.
func (v *VU) exportValue(name string) sobek.Value {
	m := v.b.main
	if _, ok := m.(*cjsRecord); ok {
		return v.rt.GetModuleInstance(m).GetBindingValue(name)
	}
	bind, ambiguous := m.ResolveExport(name)
	if bind == nil || ambiguous {
		return nil
	}
	inst := v.rt.GetModuleInstance(bind.Module)
	if inst == nil {
		return nil
	}
	if bind.BindingName == "*namespace*" {
		return v.rt.NamespaceObjectFor(bind.Module)
	}
	return inst.GetBindingValue(bind.BindingName)
}

func (v *VU) overwriteOptions(raw json.RawMessage) {
	opt, ok := v.exportValue("options").(*sobek.Object)
	if !ok {
		return
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for k, val := range m {
		_ = opt.Set(k, val)
	}
}

func (v *VU) pushModule(r sobek.ModuleRecord) { v.modStack = append(v.modStack, r) }
func (v *VU) popModule()                      { v.modStack = v.modStack[:len(v.modStack)-1] }

// activeModule is the module whose code is running: the innermost CommonJS
// module being executed, else the ES module of the calling function.
func (v *VU) activeModule() any {
	if n := len(v.modStack); n > 0 {
		return v.modStack[n-1]
	}
	if m := v.rt.GetActiveScriptOrModule(); m != nil {
		return m
	}
	return v.b.main
}

func (v *VU) currentDir() string {
	u := v.b.loader.urlOf(v.activeModule())
	if u == nil || u.Scheme != "file" {
		u = v.b.mainURL
	}
	return path.Dir(u.Path)
}

// throw raises a plain JS Error with err's message (a GoError would put
// Go function names in the script's stack trace).
func (v *VU) throw(err error) {
	ctor, ok := sobek.AssertConstructor(v.rt.Get("Error"))
	if !ok {
		panic(v.rt.NewGoError(err))
	}
	obj, cerr := ctor(nil, v.rt.ToValue(err.Error()))
	if cerr != nil {
		panic(v.rt.NewGoError(err))
	}
	panic(obj)
}

// openBytes reads a file the way open() does.
func (v *VU) openBytes(p string) ([]byte, error) {
	if v.initEnv == nil {
		return nil, errors.New("open() can only be called in the init context (the script's top level)")
	}
	if p == "" {
		return nil, errors.New("open() needs a file name")
	}
	full := cleanPath(v.currentDir(), p)
	return v.b.loader.readPath(filepath.FromSlash(full))
}

func (v *VU) open(call sobek.FunctionCall) sobek.Value {
	b, err := v.openBytes(call.Argument(0).String())
	if err != nil {
		v.throw(err)
	}
	if mode := call.Argument(1); !sobek.IsUndefined(mode) && mode.String() == "b" {
		return v.rt.ToValue(v.rt.NewArrayBuffer(append([]byte(nil), b...)))
	}
	return v.rt.ToValue(string(b))
}

func (v *VU) requireFrom(ref sobek.ModuleRecord) func(sobek.FunctionCall) sobek.Value {
	return func(call sobek.FunctionCall) sobek.Value {
		return v.require(ref, call.Argument(0).String())
	}
}

// require loads a module synchronously from init code.
func (v *VU) require(ref any, spec string) sobek.Value {
	if v.initEnv == nil {
		v.throw(errors.New("require() can only be called in the init context"))
	}
	rec, err := v.b.loader.resolve(ref, spec)
	if err != nil {
		v.throw(err)
	}
	cm, ok := rec.(sobek.CyclicModuleRecord)
	if !ok {
		v.throw(fmt.Errorf("require(%q): unsupported module type", spec))
	}
	if err := cm.Link(); err != nil {
		v.throw(err)
	}
	p := v.rt.CyclicModuleRecordEvaluate(cm, v.b.loader.resolve)
	switch p.State() {
	case sobek.PromiseStateRejected:
		panic(p.Result())
	case sobek.PromiseStatePending:
		v.throw(fmt.Errorf("require(%q): module uses top-level await; import it instead", spec))
	}
	switch inst := v.rt.GetModuleInstance(rec).(type) {
	case *cjsInstance:
		return inst.exports
	case *goModuleInstance:
		return inst.def
	default:
		return v.rt.NamespaceObjectFor(rec)
	}
}

// Activate puts the VU in a scenario: a fresh __ENV (global env plus the
// scenario's), tags reset to the test-wide tags plus the scenario's.
func (v *VU) Activate(sc *Scenario, exec string, env map[string]string, tags map[string]string) {
	v.scenario = sc
	v.exec = exec
	v.execFn = nil
	v.iterInScenario = 0
	merged, keys := v.b.cfg.Env, v.b.envKeys
	if len(env) > 0 {
		merged = make(map[string]string, len(v.b.cfg.Env)+len(env))
		for k, val := range v.b.cfg.Env {
			merged[k] = val
		}
		for k, val := range env {
			merged[k] = val
		}
		keys = sortedKeys(merged)
	}
	v.env = merged
	_ = v.rt.GlobalObject().Set("__ENV", v.envObject(merged, keys))
	t := jsmodule.NewTagMap(tags)
	sys := v.b.systemTags()
	if sc != nil && sys.Scenario {
		t.Set("scenario", sc.Name)
	}
	if sys.Group {
		t.Set("group", "")
	}
	v.sys = sys
	name, start := "", time.Time{}
	if sc != nil {
		name, start = sc.Name, sc.StartTime
	}
	v.state = &jsmodule.State{
		VUID: v.id, VUIDInTest: v.idTest, Iteration: v.iterationCount(), Scenario: name, ScenarioStart: start, Stage: -1,
		Tags: t, Metadata: jsmodule.NewTagMap(nil), Phase: jsmodule.PhaseIteration,
	}
}

func (v *VU) iterationCount() int64 {
	if v.state != nil {
		return v.state.Iteration
	}
	return -1
}

// SetSetupData gives the VU setup()'s JSON; it is decoded on the first
// iteration and reused afterwards (spec §1.3).
func (v *VU) SetSetupData(raw []byte) {
	v.setupJSON = raw
	v.setupDecoded = false
	v.setupVal = nil
}

func (v *VU) decode(raw []byte) (sobek.Value, error) {
	if raw == nil {
		return sobek.Undefined(), nil
	}
	parse, _ := sobek.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("parse"))
	val, err := parse(sobek.Undefined(), v.rt.ToValue(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("decoding JSON data: %w", err)
	}
	return val, nil
}

// IterationResult says how an iteration ended.
type IterationResult struct {
	// Full is false when the context ended the iteration early
	// (interrupted): no iteration metrics are emitted then.
	Full bool
	// Err is the exception, if the function threw (already logged).
	Err error
}

// Iteration is what the executor tells the VU about one iteration.
type Iteration struct {
	// InInstance and InTest are scenario.iterationInInstance/InTest.
	InInstance, InTest int64
	// Stage and StageName are scenario.stage (our extension); Stage < 0
	// means the scenario has no stages.
	Stage     int
	StageName string
}

// RunIteration runs the activated exec function once.
func (v *VU) RunIteration(ctx context.Context, it Iteration) IterationResult {
	if v.state == nil {
		v.Activate(nil, "default", nil, nil)
	}
	st := v.state
	st.Iteration++
	v.iter = it
	st.Stage, st.StageName = it.Stage, it.StageName
	if v.sys.VU {
		st.Metadata.Set("vu", strconv.FormatUint(v.id, 10))
	}
	if v.sys.Iter {
		st.Metadata.Set("iter", strconv.FormatInt(st.Iteration, 10))
	}
	if !v.setupDecoded {
		val, err := v.decode(v.setupJSON)
		if err != nil {
			return IterationResult{Full: true, Err: err}
		}
		v.setupVal, v.setupDecoded = val, true
	}
	if v.execFn == nil {
		fn, ok := sobek.AssertFunction(v.exportValue(v.exec))
		if !ok {
			return IterationResult{Err: fmt.Errorf("function %q not found in exports", v.exec)}
		}
		v.execFn = fn
	}
	start := time.Now()
	_, err := v.callFn(ctx, v.execFn, v.setupVal)
	end := time.Now()
	v.iterInScenario++
	v.emitData(end)
	if ctx.Err() != nil && (err == nil || errors.Is(err, errInterrupted)) {
		return IterationResult{Full: false}
	}
	var ab *AbortError
	if errors.As(err, &ab) {
		// k6 still counts an iteration that called test.abort() (errata 5).
		v.emitIteration(start, end)
		return IterationResult{Full: true, Err: ab}
	}
	if err != nil && !errors.Is(err, errInterrupted) {
		v.logException(err)
	}
	v.emitIteration(start, end)
	return IterationResult{Full: true, Err: err}
}

func (v *VU) logException(err error) {
	fields := []string{"source", "stacktrace"}
	if v.scenario != nil {
		fields = append(fields, "scenario", v.scenario.Name, "executor", v.scenario.Executor)
	}
	v.b.cfg.Logger.Log(LevelError, err.Error(), fields...)
}

func (v *VU) emitIteration(start, end time.Time) {
	tags := v.state.Tags.TagSet()
	md := v.metadata()
	v.buf.Add(metrics.Sample{Metric: v.b.metrics.Iterations, Time: end, Value: 1, Tags: tags, Metadata: md})
	v.buf.Add(metrics.Sample{Metric: v.b.metrics.IterationDuration, Time: end, Value: ms(end.Sub(start)), Tags: tags, Metadata: md})
}

func (v *VU) metadata() metrics.TagSet {
	if v.state == nil || v.state.Metadata == nil || v.state.Metadata.Len() == 0 {
		return metrics.TagSet{}
	}
	return v.state.Metadata.TagSet()
}

func (v *VU) emitData(t time.Time) {
	if v.state == nil {
		return
	}
	tags := v.state.Tags.TagSet()
	v.buf.Add(metrics.Sample{Metric: v.b.metrics.DataSent, Time: t, Value: float64(v.BytesSent.Swap(0)), Tags: tags})
	v.buf.Add(metrics.Sample{Metric: v.b.metrics.DataReceived, Time: t, Value: float64(v.BytesReceived.Swap(0)), Tags: tags})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// callFn calls fn on the event loop and unwraps a returned promise.
func (v *VU) callFn(ctx context.Context, fn sobek.Callable, args ...sobek.Value) (sobek.Value, error) {
	var ret sobek.Value
	err := v.call(ctx, func() error {
		r, err := fn(sobek.Undefined(), args...)
		ret = r
		return err
	})
	if err != nil {
		return nil, err
	}
	if ret == nil {
		return sobek.Undefined(), nil
	}
	if p, ok := ret.Export().(*sobek.Promise); ok {
		switch p.State() {
		case sobek.PromiseStateRejected:
			return nil, valueError(p.Result())
		case sobek.PromiseStatePending:
			if ctx.Err() != nil {
				return nil, errInterrupted
			}
			return nil, errors.New("the function's promise never settled")
		}
		return p.Result(), nil
	}
	return ret, nil
}

// runLifecycle runs setup/teardown/handleSummary in a fresh VU 0 with a
// timeout. tagGroup is "::setup"/"::teardown" or "" (no samples expected).
func (b *Bundle) runLifecycle(ctx context.Context, name string, phase jsmodule.Phase, timeout time.Duration, args func(*VU) ([]sobek.Value, error)) (sobek.Value, *VU, error) {
	vu, err := b.newVU(ctx, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	tags := jsmodule.NewTagMap(nil)
	vu.sys = b.systemTags()
	if (phase == jsmodule.PhaseSetup || phase == jsmodule.PhaseTeardown) && vu.sys.Group {
		tags.Set("group", "::"+name)
	}
	vu.state = &jsmodule.State{Tags: tags, Metadata: jsmodule.NewTagMap(nil), Group: "::" + name, Phase: phase, Stage: -1}
	fn, ok := sobek.AssertFunction(vu.exportValue(name))
	if !ok {
		vu.Close()
		return nil, nil, fmt.Errorf("%s is not an exported function", name)
	}
	a, err := args(vu)
	if err != nil {
		vu.Close()
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errLifecycleTimeout)
	defer cancel()
	ret, err := vu.callFn(cctx, fn, a...)
	if phase != jsmodule.PhaseSummary {
		vu.emitData(time.Now())
	}
	if err != nil {
		if errors.Is(context.Cause(cctx), errLifecycleTimeout) {
			vu.Close()
			return nil, nil, &TimeoutError{Phase: name, Timeout: timeout.String()}
		}
		var ab *AbortError
		if errors.As(err, &ab) {
			vu.Close()
			return nil, nil, ab
		}
		vu.Close()
		return nil, nil, &ScriptError{Phase: name, Err: err}
	}
	return ret, vu, nil
}

var errLifecycleTimeout = errors.New("lifecycle timeout")

// RunSetup calls setup() (if exported) and returns its result as JSON, nil
// for undefined. The JSON comes from Go's encoder, as in k6 (spec §1.3).
func (b *Bundle) RunSetup(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if !b.HasExport("setup") {
		return nil, nil
	}
	ret, vu, err := b.runLifecycle(ctx, "setup", jsmodule.PhaseSetup, timeout, func(*VU) ([]sobek.Value, error) { return nil, nil })
	if err != nil {
		return nil, err
	}
	defer vu.Close()
	if ret == nil || sobek.IsUndefined(ret) {
		return nil, nil
	}
	raw, err := json.Marshal(ret.Export())
	if err != nil {
		return nil, fmt.Errorf("error marshaling setup() data to JSON: %w", err)
	}
	return raw, nil
}

// RunTeardown calls teardown(data) (if exported) with a fresh decode of data.
func (b *Bundle) RunTeardown(ctx context.Context, timeout time.Duration, data []byte) error {
	if !b.HasExport("teardown") {
		return nil
	}
	_, vu, err := b.runLifecycle(ctx, "teardown", jsmodule.PhaseTeardown, timeout, func(vu *VU) ([]sobek.Value, error) {
		d, err := vu.decode(data)
		return []sobek.Value{d}, err
	})
	if vu != nil {
		vu.Close()
	}
	return err
}

// SummaryOutput is one destination handleSummary returned.
type SummaryOutput struct {
	// Dest is "stdout", "stderr" or a file path.
	Dest string
	Data []byte
}

// RunHandleSummary calls handleSummary(data) where data is the summary JSON
// with setup_data added. ok is false when the default summary should be
// printed: handleSummary is not exported or returned null/undefined.
func (b *Bundle) RunHandleSummary(ctx context.Context, timeout time.Duration, summaryJSON, setupData []byte) (outs []SummaryOutput, ok bool, err error) {
	if !b.HasExport("handleSummary") {
		return nil, false, nil
	}
	ret, vu, err := b.runLifecycle(ctx, "handleSummary", jsmodule.PhaseSummary, timeout, func(vu *VU) ([]sobek.Value, error) {
		d, err := vu.decode(summaryJSON)
		if err != nil {
			return nil, err
		}
		if o, isObj := d.(*sobek.Object); isObj && setupData != nil {
			sd, err := vu.decode(setupData)
			if err != nil {
				return nil, err
			}
			_ = o.Set("setup_data", sd)
		}
		return []sobek.Value{d}, nil
	})
	if err != nil {
		return nil, false, err
	}
	defer vu.Close()
	if ret == nil || sobek.IsUndefined(ret) || sobek.IsNull(ret) {
		return nil, false, nil
	}
	obj, isObj := ret.(*sobek.Object)
	if !isObj {
		return nil, false, fmt.Errorf("handleSummary() must return an object, got %s", ret.String())
	}
	for _, k := range obj.Keys() {
		val := obj.Get(k)
		switch x := val.Export().(type) {
		case string:
			outs = append(outs, SummaryOutput{Dest: k, Data: []byte(x)})
		case sobek.ArrayBuffer:
			outs = append(outs, SummaryOutput{Dest: k, Data: append([]byte(nil), x.Bytes()...)})
		default:
			return nil, false, fmt.Errorf("handleSummary(): the value for %q must be a string or an ArrayBuffer, got %s", k, typeName(val))
		}
	}
	return outs, true, nil
}

func typeName(v sobek.Value) string {
	if v == nil || sobek.IsUndefined(v) {
		return "undefined"
	}
	if sobek.IsNull(v) {
		return "null"
	}
	if v.ExportType() != nil {
		return v.ExportType().String()
	}
	return strconv.Quote(v.String())
}

// helper for console formatting of values.
func (v *VU) stringify(val sobek.Value) string {
	if val == nil || sobek.IsUndefined(val) {
		return "undefined"
	}
	if o, ok := val.(*sobek.Object); ok {
		if _, isFn := sobek.AssertFunction(o); isFn {
			return o.String()
		}
		if st := o.Get("stack"); st != nil && !sobek.IsUndefined(st) {
			if cls := o.ClassName(); cls == "Error" {
				return strings.TrimRight(st.String(), "\n")
			}
		}
		stringify, _ := sobek.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("stringify"))
		if s, err := stringify(sobek.Undefined(), o); err == nil && !sobek.IsUndefined(s) {
			return s.String()
		}
	}
	return val.String()
}
