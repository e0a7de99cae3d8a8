// Package opentelemetry is `--out opentelemetry` (and its older name
// `experimental-opentelemetry`): k6 v2.2's OpenTelemetry output, built on the
// OpenTelemetry Go SDK and its OTLP exporters (gRPC by default, or
// http/protobuf), configured by the same K6_OTEL_* variables with the same
// defaults, and sending the same instruments (docs/k6-compat.md §7.5):
//
//   - Counter → Float64Counter, Gauge → Float64Gauge, Trend →
//     Float64Histogram (the SDK's default explicit buckets), Rate → one
//     Int64Counter "<name>.total" counting samples, with the attribute
//     condition = "zero" | "nonzero";
//   - names are K6_OTEL_METRIC_PREFIX + the metric's name; units "ms" for
//     time metrics and "By" for data; attributes are the sample's non-empty
//     tags; cumulative temporality unless OTEL_EXPORTER_OTLP_METRICS_
//     TEMPORALITY_PREFERENCE says otherwise; the resource is the SDK's
//     default (so OTEL_RESOURCE_ATTRIBUTES) with service.name and
//     service.version; the meter is "k6".
//
// It never slows the run: AddSamples appends to a buffer; every flush
// interval (1 s) the outputs' pump (engine/output/pump) records the
// buffered samples into the SDK's instruments, and the SDK's periodic reader exports them every export
// interval (10 s) and once more at Stop. A backend that is down, refuses or
// answers an error costs the copy, never the run: a failing export is one
// warning (and one when exports work again), the final export's failure one
// error line as k6 logs it, and the counts go into the result's "outputs".
package opentelemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelmetric "go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/pump"
)

// Names of the output: the current one and the one before k6 v1.4
// graduated it (still accepted, with k6's warning).
const (
	Name             = "opentelemetry"
	ExperimentalName = "experimental-opentelemetry"
)

// ExperimentalWarning is k6 v2.2's warning for the old name, word for word
// (its missing space included).
var ExperimentalWarning = fmt.Sprintf("OpenTelemetry output has been graduated as a stable output."+
	"You can now use just %q instead of %q. The experimental version will be removed in future versions.", Name, ExperimentalName)

// Log writes one line at a level ("info", "warn", "error") with key/value
// fields.
type Log func(level, msg string, fields ...string)

// Output is the OpenTelemetry output.
type Output struct {
	cfg Config
	log Log

	exp      *countingExporter
	provider *sdkmetric.MeterProvider
	meter    otelmetric.Meter

	pump pump.Pump
	once sync.Once

	// owned by the pump's goroutine
	inst    map[*metrics.Metric]instrument
	attrs   attrCache
	errs    int64
	lastErr error
}

// instrument is one metric's SDK instrument (one of the four is set).
type instrument struct {
	counter   otelmetric.Float64Counter
	gauge     otelmetric.Float64Gauge
	histogram otelmetric.Float64Histogram
	rate      otelmetric.Int64Counter
}

// New makes the output; log receives its lines (nil: none).
func New(cfg Config, log Log) *Output {
	if log == nil {
		log = func(string, string, ...string) {}
	}
	o := &Output{cfg: cfg, log: log, inst: map[*metrics.Metric]instrument{}, attrs: newAttrCache()}
	o.pump = pump.Pump{Interval: cfg.FlushInterval, Write: o.record}
	return o
}

// Description is the banner's entry, as k6 prints it.
func (o *Output) Description() string { return fmt.Sprintf("%s (%s)", Name, o.cfg) }

// Start builds the exporter and the meter provider and starts the flusher.
func (o *Output) Start() error {
	exp, err := newExporter(o.cfg)
	if err != nil {
		return fmt.Errorf("failed to create OpenTelemetry exporter: %w", err)
	}
	o.exp = &countingExporter{Exporter: exp, onFail: o.exportFailed, onRecover: func(failed int64) {
		o.log("warn", fmt.Sprintf("OpenTelemetry exports work again after %d failed", failed))
	}}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", o.cfg.ServiceName),
		attribute.String("service.version", o.cfg.ServiceVersion)))
	if err != nil {
		return fmt.Errorf("failed to create OpenTelemetry resource: %w", err)
	}
	o.provider = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(o.exp, sdkmetric.WithInterval(o.cfg.ExportInterval))))
	o.meter = o.provider.Meter("k6")
	o.pump.Start()
	return nil
}

func (o *Output) exportFailed(err error) {
	o.log("warn", fmt.Sprintf("failed to upload metrics: %v (OpenTelemetry output; the run goes on, the count of failed exports is in the result)", trimPrefix(err)))
}

// AddSamples copies the batch for the next flush.
func (o *Output) AddSamples(samples []metrics.Sample) { o.pump.Add(samples) }

// record puts a flush's samples into the instruments; a sample that cannot
// be is counted, not an error of the batch.
func (o *Output) record(batch []metrics.Sample) error {
	ctx := context.Background()
	for i := range batch {
		if err := o.recordOne(ctx, &batch[i]); err != nil {
			o.errs++
			o.lastErr = err
		}
	}
	return nil
}

func (o *Output) recordOne(ctx context.Context, s *metrics.Sample) error {
	in, ok := o.inst[s.Metric]
	if !ok {
		var err error
		if in, err = o.newInstrument(s.Metric); err != nil {
			return err
		}
		o.inst[s.Metric] = in
	}
	switch {
	case in.counter != nil:
		in.counter.Add(ctx, s.Value, otelmetric.WithAttributeSet(o.attrs.get(s.Tags, "")))
	case in.gauge != nil:
		in.gauge.Record(ctx, s.Value, otelmetric.WithAttributeSet(o.attrs.get(s.Tags, "")))
	case in.histogram != nil:
		in.histogram.Record(ctx, s.Value, otelmetric.WithAttributeSet(o.attrs.get(s.Tags, "")))
	default:
		cond := "zero"
		if s.Value != 0 {
			cond = "nonzero"
		}
		in.rate.Add(ctx, 1, otelmetric.WithAttributeSet(o.attrs.get(s.Tags, cond)))
	}
	return nil
}

func (o *Output) newInstrument(m *metrics.Metric) (instrument, error) {
	name := o.cfg.MetricPrefix + m.Name
	unit := ""
	switch m.Contains {
	case metrics.Time:
		unit = "ms"
	case metrics.Data:
		unit = "By"
	}
	var in instrument
	var err error
	switch m.Type {
	case metrics.Counter:
		in.counter, err = o.meter.Float64Counter(name, otelmetric.WithUnit(unit))
	case metrics.Gauge:
		in.gauge, err = o.meter.Float64Gauge(name, otelmetric.WithUnit(unit))
	case metrics.Trend:
		in.histogram, err = o.meter.Float64Histogram(name, otelmetric.WithUnit(unit))
	case metrics.Rate:
		// k6 gives the rate's counter no unit.
		in.rate, err = o.meter.Int64Counter(name + ".total")
	default:
		return in, fmt.Errorf("metric %q has unsupported metric type", m.Name)
	}
	if err != nil {
		return in, fmt.Errorf("metric %q: %w", m.Name, err)
	}
	return in, nil
}

// Stop records what is buffered, exports it once more and shuts the
// exporter down. A failure of that last export is one error line, as k6
// logs it; it never fails the run.
func (o *Output) Stop() error {
	if o.provider == nil {
		return nil
	}
	o.once.Do(func() {
		_ = o.pump.Halt() // record returns no error: failures are counted
		if o.errs > 0 {
			o.log("warn", fmt.Sprintf("OpenTelemetry output: %d samples could not be recorded; last error: %v", o.errs, o.lastErr))
		}
		o.exp.stop()
		// The exporter bounds each export by its timeout (10 s unless
		// OTEL_EXPORTER_OTLP_TIMEOUT says otherwise); this bounds the rest.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := o.provider.Shutdown(ctx)
		if last := o.exp.last(); last != nil {
			err = last
		}
		if err != nil {
			o.log("error", "can't shutdown OpenTelemetry metric provider", "error", err.Error())
		}
	})
	return nil
}

// Counts are the output's delivery counts for the result's "outputs".
func (o *Output) Counts() map[string]int64 {
	if o.exp == nil {
		return map[string]int64{}
	}
	exports, failed := o.exp.counts()
	return map[string]int64{"exports": exports, "failed_exports": failed}
}

// trimPrefix drops the exporter's own "failed to upload metrics: " so the
// warning does not say it twice.
func trimPrefix(err error) string {
	const p = "failed to upload metrics: "
	s := err.Error()
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
