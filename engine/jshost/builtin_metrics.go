package jshost

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
)

// metricNameRE is k6's custom metric name rule (spec §1.10).
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{1,128}$`)

func newMetricsModule(mvu jsmodule.VU) (jsmodule.Instance, error) {
	v, err := hostVU(mvu)
	if err != nil {
		return nil, err
	}
	mk := func(t metrics.Type) func(sobek.ConstructorCall) *sobek.Object {
		return func(call sobek.ConstructorCall) *sobek.Object { return v.newCustomMetric(call, t) }
	}
	return jsmodule.StaticExports{Named: map[string]any{
		"Counter": mk(metrics.Counter), "Gauge": mk(metrics.Gauge),
		"Rate": mk(metrics.Rate), "Trend": mk(metrics.Trend),
	}}, nil
}

func (v *VU) newCustomMetric(call sobek.ConstructorCall, t metrics.Type) *sobek.Object {
	rt := v.rt
	if v.initEnv == nil {
		v.throw(errors.New("metrics must be declared in the init context"))
	}
	name := call.Argument(0).String()
	if !metricNameRE.MatchString(name) {
		v.throw(fmt.Errorf("invalid metric name %q: it must match %s", name, metricNameRE))
	}
	contains := metrics.Default
	if call.Argument(1).ToBoolean() {
		contains = metrics.Time
	}
	m, err := v.Registry().New(name, t, contains)
	if err != nil {
		v.throw(err)
	}
	o := rt.NewObject()
	_ = o.Set("name", name)
	_ = o.Set("add", func(c sobek.FunctionCall) sobek.Value { return rt.ToValue(v.addSample(m, c)) })
	return o
}

func (v *VU) addSample(m *metrics.Metric, c sobek.FunctionCall) bool {
	st := v.state
	if st == nil || v.initEnv != nil {
		v.throw(errors.New("metric samples can't be added in the init context"))
	}
	val, ok := sampleValue(c.Argument(0))
	if !ok {
		if v.b.throw.Load() {
			v.throw(fmt.Errorf("%s.add(%s): the value is not a number", m.Name, c.Argument(0).String()))
		}
		v.b.cfg.Logger.Warnf("%s.add(%s): the value is not a number; the sample was dropped", m.Name, c.Argument(0).String())
		return false
	}
	tags, err := v.stags.tagSet(st.Tags.TagSet(), c.Argument(1))
	if err != nil {
		v.throw(err)
	}
	v.buf.Add(metrics.Sample{Metric: m, Time: time.Now(), Value: val, Tags: tags, Metadata: v.metadata()})
	return true
}

func sampleValue(a sobek.Value) (float64, bool) {
	if a == nil || sobek.IsUndefined(a) || sobek.IsNull(a) {
		return 0, false
	}
	switch x := a.Export().(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(x), true
	case float64:
		if math.IsNaN(x) {
			return 0, false
		}
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	f := a.ToFloat()
	return f, !math.IsNaN(f)
}
