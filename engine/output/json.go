package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/pump"
)

// JSON writes k6's NDJSON: one Metric line before a metric's first Point,
// then a Point line per sample (spec §7.1). Flushed every 200 ms.
type JSON struct {
	name string
	p    Params
	out  *sink
	bw   *bufio.Writer
	pump pump.Pump
	seen map[string]bool
	buf  []byte
	tz   *time.Location
}

var _ Output = (*JSON)(nil)

// NewJSON creates a JSON output for a file name ("" or "-" is stdout, a
// ".gz" suffix gzips).
func NewJSON(name string, p Params) *JSON {
	j := &JSON{name: name, p: p, seen: map[string]bool{}, tz: p.Location}
	if j.tz == nil {
		j.tz = time.Local
	}
	j.pump = pump.Pump{Interval: 200 * time.Millisecond, Write: j.write}
	return j
}

// Start opens the file.
func (j *JSON) Start() error {
	s, err := openSink(j.name, j.p.Stdout)
	if err != nil {
		return err
	}
	j.out = s
	j.bw = bufio.NewWriterSize(s.w, 64<<10)
	j.pump.Start()
	return nil
}

// AddSamples copies samples for the next write.
func (j *JSON) AddSamples(s []metrics.Sample) { j.pump.Add(s) }

// Stop writes the rest and closes the file.
func (j *JSON) Stop() error {
	err := j.pump.Halt()
	if j.out == nil {
		return err
	}
	if ferr := j.bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := j.out.Close(); err == nil {
		err = cerr
	}
	j.out = nil
	return err
}

func (j *JSON) write(batch []metrics.Sample) error {
	for i := range batch {
		s := &batch[i]
		if s.Metric == nil {
			continue
		}
		if !j.seen[s.Metric.Name] {
			j.seen[s.Metric.Name] = true
			line, err := j.metricLine(s.Metric)
			if err != nil {
				return err
			}
			if _, err := j.bw.Write(line); err != nil {
				return err
			}
		}
		j.buf = appendPoint(j.buf[:0], s, j.tz)
		if _, err := j.bw.Write(j.buf); err != nil {
			return err
		}
	}
	return j.bw.Flush()
}

type jsonThreshold struct {
	Threshold      string `json:"threshold"`
	AbortOnFail    bool   `json:"abortOnFail"`
	DelayAbortEval string `json:"delayAbortEval"`
}

type jsonSubmetric struct {
	Name   string         `json:"name"`
	Suffix string         `json:"suffix"`
	Tags   metrics.TagSet `json:"tags"`
}

type jsonMetricData struct {
	Name       string            `json:"name"`
	Type       metrics.Type      `json:"type"`
	Contains   metrics.ValueType `json:"contains"`
	Thresholds []any             `json:"thresholds"`
	Submetrics []jsonSubmetric   `json:"submetrics"`
}

type jsonMetricLine struct {
	Type   string         `json:"type"`
	Data   jsonMetricData `json:"data"`
	Metric string         `json:"metric"`
}

// metricLine encodes the declaration of m: its own thresholds (a string, or
// an object when abortOnFail is set), and its sub-metrics (null when none).
func (j *JSON) metricLine(m *metrics.Metric) ([]byte, error) {
	d := jsonMetricData{Name: m.Name, Type: m.Type, Contains: m.Contains, Thresholds: []any{}}
	seenSub := map[string]bool{}
	addSub := func(key string) {
		sel, err := metrics.ParseSelector(key)
		if err != nil || sel.Metric != m.Name || !sel.IsSubmetric() || seenSub[key] {
			return
		}
		seenSub[key] = true
		d.Submetrics = append(d.Submetrics, jsonSubmetric{Name: key, Suffix: sel.Suffix, Tags: sel.Tags})
	}
	if j.p.Thresholds != nil {
		for _, t := range j.p.Thresholds.Thresholds {
			if t.Key == m.Name {
				if t.AbortOnFail {
					d.Thresholds = append(d.Thresholds, jsonThreshold{t.Source, true, t.DelayAbortEval.String()})
				} else {
					d.Thresholds = append(d.Thresholds, t.Source)
				}
			}
			addSub(t.Key)
		}
	}
	for _, k := range j.p.Submetrics {
		addSub(k)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // k6 writes `p(95)<5000`, not `p(95)\u003c5000`
	if err := enc.Encode(jsonMetricLine{Type: "Metric", Data: d, Metric: m.Name}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendPoint encodes a Point line by hand: it is the per-sample path.
func appendPoint(b []byte, s *metrics.Sample, tz *time.Location) []byte {
	b = append(b, `{"metric":`...)
	b = strconv.AppendQuote(b, s.Metric.Name) // metric names are [a-zA-Z0-9_]
	b = append(b, `,"type":"Point","data":{"time":"`...)
	b = s.Time.In(tz).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","value":`...)
	b = appendJSONFloat(b, s.Value)
	b = append(b, `,"tags":`...)
	b = appendTags(b, s.Tags)
	if s.Metadata.Len() > 0 {
		b = append(b, `,"metadata":`...)
		b = appendTags(b, s.Metadata)
	}
	return append(b, "}}\n"...)
}

func appendTags(b []byte, t metrics.TagSet) []byte { return t.AppendJSON(b) }

// appendJSONFloat formats like encoding/json does for float64.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	b = strconv.AppendFloat(b, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
