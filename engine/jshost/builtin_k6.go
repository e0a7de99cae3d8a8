package jshost

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/k6crypto"
	"github.com/buzzload/buzzload/engine/jshost/k6encoding"
	"github.com/buzzload/buzzload/engine/jshost/k6http"
	"github.com/buzzload/buzzload/engine/jshost/k6websockets"
	"github.com/buzzload/buzzload/engine/jshost/textsummary"
	"github.com/buzzload/buzzload/engine/metrics"
)

// NewRegistry returns a registry holding the built-in modules: k6,
// k6/metrics, k6/execution, k6/timers, k6/data, k6/http, k6/encoding and
// k6/crypto. Extensions are added with Register before the bundle is built.
func NewRegistry() *jsmodule.Registry { return NewRegistryWith(RegistryOptions{}) }

// RegistryOptions configure the built-in modules.
type RegistryOptions struct {
	// UserAgent is k6/http's default User-Agent; empty gives
	// k6http.DefaultUserAgent("dev").
	UserAgent string
	// Lookup resolves names for the run's dns resolver, shared by k6/http
	// and the WebSockets; nil: Go's resolver (dnsresolve.GoLookup).
	Lookup dnsresolve.LookupFunc
}

// NewRegistryWith is NewRegistry with options.
func NewRegistryWith(o RegistryOptions) *jsmodule.Registry {
	if o.UserAgent == "" {
		o.UserAgent = k6http.DefaultUserAgent("dev")
	}
	r := jsmodule.NewRegistry()
	must := func(err error) {
		if err != nil {
			panic(err) // fixed paths on a fresh registry cannot clash
		}
	}
	must(r.Register("k6", jsmodule.ModuleFunc(newK6Module)))
	must(r.Register("k6/metrics", jsmodule.ModuleFunc(newMetricsModule)))
	must(r.Register("k6/execution", jsmodule.ModuleFunc(newExecutionModule)))
	must(r.Register("k6/timers", jsmodule.ModuleFunc(newTimersModule)))
	must(r.Register("k6/data", jsmodule.ModuleFunc(newDataModule)))
	resolvers := dnsresolve.NewShared(o.Lookup, nil)
	must(r.Register("k6/http", k6http.New(k6http.Config{UserAgent: o.UserAgent, Resolvers: resolvers})))
	must(r.Register("k6/encoding", k6encoding.Module))
	must(r.Register("k6/crypto", k6crypto.Module))
	must(r.Register(textsummary.ImportPath, textsummary.Module))
	ws := k6websockets.New(resolvers)
	must(r.Register("k6/experimental/websockets", ws))
	must(r.Register("k6/websockets", ws))
	return r
}

func hostVU(vu jsmodule.VU) (*VU, error) {
	v, ok := vu.(*VU)
	if !ok {
		return nil, fmt.Errorf("built-in module needs the engine/jshost VU, got %T", vu)
	}
	return v, nil
}

func newTimersModule(mvu jsmodule.VU) (jsmodule.Instance, error) {
	v, err := hostVU(mvu)
	if err != nil {
		return nil, err
	}
	return jsmodule.StaticExports{Named: map[string]any{
		"setTimeout": v.timers.setTimeout, "setInterval": v.timers.setInterval,
		"clearTimeout": v.timers.clear, "clearInterval": v.timers.clear,
	}}, nil
}

func newK6Module(mvu jsmodule.VU) (jsmodule.Instance, error) {
	v, err := hostVU(mvu)
	if err != nil {
		return nil, err
	}
	k := &k6Module{vu: v}
	return jsmodule.StaticExports{Names: k6Names, Lookup: k.export}, nil
}

var k6Names = []string{"check", "fail", "group", "randomSeed", "sleep"}

func (k *k6Module) export(name string) any {
	switch name {
	case "check":
		return k.check
	case "group":
		return k.group
	case "sleep":
		return k.sleepCall
	case "fail":
		return k.fail
	}
	return k.randomSeed
}

type k6Module struct {
	vu *VU
	// timer is sleep's, reused: a new one per call was ~250 bytes of
	// garbage per iteration of every sleeping VU.
	timer *time.Timer
	// checkTags are the tag sets of the checks last emitted with base and
	// no extra tags, by check name: rebuilding them was a TagSet per check
	// per iteration (docs/benchmarks.md "Clients per core").
	checkBase metrics.TagSet
	checkTags []namedTags
}

type namedTags struct {
	name string
	tags metrics.TagSet
}

// maxCheckTags bounds the check tag cache (a script with many check names
// still works, it just builds the rest each time).
const maxCheckTags = 16

// checkTagSet is base with the check tag (when enabled) for a check named
// name; extra tags, when given, are laid over base first.
func (k *k6Module) checkTagSet(base metrics.TagSet, extra map[string]string, name string) metrics.TagSet {
	if len(extra) > 0 {
		tags := withTags(base, extra)
		if k.vu.sys.Check {
			tags = tags.With("check", name)
		}
		return tags
	}
	if !k.vu.sys.Check {
		return base
	}
	if !k.checkBase.Equal(base) {
		k.checkBase, k.checkTags = base, k.checkTags[:0]
	}
	for _, c := range k.checkTags {
		if c.name == name {
			return c.tags
		}
	}
	tags := base.With("check", name)
	if len(k.checkTags) < maxCheckTags {
		k.checkTags = append(k.checkTags, namedTags{name, tags})
	}
	return tags
}

func (k *k6Module) needState(fn string) *jsmodule.State {
	st := k.vu.state
	if st == nil {
		k.vu.throw(fmt.Errorf("%s() can't be called in the init context", fn))
	}
	return st
}

// check(value, {name: fnOrValue}, [tags]) emits one `checks` sample per key.
func (k *k6Module) check(call sobek.FunctionCall) sobek.Value {
	rt := k.vu.rt
	st := k.needState("check")
	val := call.Argument(0)
	sets, ok := call.Argument(1).(*sobek.Object)
	if !ok {
		k.vu.throw(errors.New("check() needs an object of checks as its second argument"))
	}
	extra, err := tagArg(rt, call.Argument(2))
	if err != nil {
		k.vu.throw(err)
	}
	all := true
	for _, name := range sets.Keys() {
		if strings.Contains(name, "::") {
			k.vu.throw(fmt.Errorf("check name %q contains the reserved '::'", name))
		}
		item := sets.Get(name)
		pass := false
		var thrown any
		if fn, isFn := sobek.AssertFunction(item); isFn {
			func() {
				defer func() {
					if r := recover(); r != nil {
						thrown = r
					}
				}()
				res, err := fn(sobek.Undefined(), val)
				if err != nil {
					thrown = err
					return
				}
				if _, isP := res.Export().(*sobek.Promise); isP {
					thrown = rt.NewGoError(errors.New("check() does not support async functions"))
					return
				}
				pass = res.ToBoolean()
			}()
		} else {
			pass = item.ToBoolean()
		}
		tags := k.checkTagSet(st.Tags.TagSet(), extra, name)
		var value float64
		if pass {
			value = 1
		} else {
			all = false
		}
		k.vu.buf.Add(metrics.Sample{Metric: k.vu.b.metrics.Checks, Time: time.Now(), Value: value, Tags: tags, Metadata: k.vu.metadata()})
		if thrown != nil {
			if ex, isEx := thrown.(*sobek.Exception); isEx {
				panic(ex.Value())
			}
			panic(thrown)
		}
	}
	return rt.ToValue(all)
}

// group(name, fn) runs fn with the group tag set to <parent>::name.
func (k *k6Module) group(name string, fn sobek.Callable) (sobek.Value, error) {
	st := k.needState("group")
	if strings.Contains(name, "::") {
		return nil, fmt.Errorf("group name %q contains the reserved '::'", name)
	}
	if fn == nil {
		return nil, errors.New("group() needs a function")
	}
	parent := st.Group
	path := parent + "::" + name
	prevTag, _ := st.Tags.Get("group")
	st.Group = path
	if k.vu.sys.Group {
		st.Tags.Set("group", path)
	}
	start := time.Now()
	ret, err := fn(sobek.Undefined())
	end := time.Now()
	st.Group = parent
	tags := st.Tags.TagSet()
	if k.vu.sys.Group {
		st.Tags.Set("group", prevTag)
		tags = tags.With("group", path)
	}
	k.vu.buf.Add(metrics.Sample{Metric: k.vu.b.metrics.GroupDuration, Time: end, Value: ms(end.Sub(start)), Tags: tags, Metadata: k.vu.metadata()})
	if err != nil {
		return nil, err
	}
	if ret != nil {
		if _, isP := ret.Export().(*sobek.Promise); isP {
			return nil, errors.New("group() does not support async functions")
		}
	}
	return ret, nil
}

// sleepCall is sleep(secs) called without reflection: sobek's reflect call
// of a func(float64) allocates on every call and its frames (~1.4 KB) stay
// on the VU goroutine's stack while it sleeps. The argument converts as the
// reflect call converted it: undefined and null are 0, anything else
// ToNumber.
func (k *k6Module) sleepCall(call sobek.FunctionCall) sobek.Value {
	secs := 0.0
	if a := call.Argument(0); !sobek.IsUndefined(a) && !sobek.IsNull(a) {
		secs = a.ToFloat()
	}
	k.sleep(secs)
	return sobek.Undefined()
}

// sleep blocks the VU (and its event loop, as in k6) for float seconds; it
// returns early when the VU's context ends.
func (k *k6Module) sleep(secs float64) {
	if !(secs > 0) { // also NaN
		return
	}
	d := time.Duration(secs * float64(time.Second))
	if k.timer == nil {
		k.timer = time.NewTimer(d)
	} else {
		k.timer.Reset(d) // Go ≥ 1.23: a stopped timer's channel is empty
	}
	select {
	case <-k.timer.C:
	case <-k.vu.ctx.Done():
		k.timer.Stop()
		k.vu.StopIfDone()
	}
}

func (k *k6Module) fail(msg string) {
	k.vu.throw(errors.New(msg))
}

func (k *k6Module) randomSeed(seed int64) {
	r := rand.New(rand.NewSource(seed)) //nolint:gosec // Math.random is not crypto
	k.vu.rt.SetRandSource(r.Float64)
}

// withTags lays extra tags over base.
func withTags(base metrics.TagSet, extra map[string]string) metrics.TagSet {
	if len(extra) == 0 {
		return base
	}
	return base.Merge(metrics.TagsFromMap(extra))
}

// tagArg reads an optional tags object: values must be strings, numbers or
// booleans.
func tagArg(rt *sobek.Runtime, v sobek.Value) (map[string]string, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil, nil
	}
	o, ok := v.(*sobek.Object)
	if !ok {
		return nil, errors.New("tags must be an object")
	}
	out := map[string]string{}
	for _, k := range o.Keys() {
		s, err := tagValue(o.Get(k))
		if err != nil {
			return nil, fmt.Errorf("tag %q: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
}

func tagValue(v sobek.Value) (string, error) {
	switch v.Export().(type) {
	case string, int64, float64, bool:
		return v.String(), nil
	}
	return "", fmt.Errorf("invalid tag value type %s (want string, number or boolean)", typeName(v))
}
