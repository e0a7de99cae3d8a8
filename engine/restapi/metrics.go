package restapi

import (
	"net/http"

	"github.com/buzzload/buzzload/engine/metrics"
)

type metricAttributes struct {
	Type     string             `json:"type"`
	Contains string             `json:"contains"`
	Tainted  *bool              `json:"tainted"`
	Sample   map[string]float64 `json:"sample"`
}

// sampleStats are the values k6's REST API shows per metric type.
var sampleStats = map[metrics.Type][]string{
	metrics.Trend:   {"avg", "min", "med", "max", "p(90)", "p(95)"},
	metrics.Counter: {"count", "rate"},
	metrics.Gauge:   {"value"},
	metrics.Rate:    {"rate"},
}

func metricResource(m *metrics.MetricSnapshot, snap *metrics.Snapshot, tainted map[string]bool) resource[metricAttributes] {
	a := metricAttributes{Type: m.Type.String(), Contains: m.Contains.String(), Sample: map[string]float64{}}
	if t, ok := tainted[m.Name]; ok {
		a.Tainted = &t
	}
	for _, name := range sampleStats[m.Type] {
		st, err := metrics.ParseStat(name)
		if err != nil {
			continue
		}
		if v, ok := m.Sink.Value(st, snap.Duration); ok {
			a.Sample[name] = v
		}
	}
	return resource[metricAttributes]{Type: "metrics", ID: m.Name, Attributes: a}
}

// getMetrics writes every metric that has samples, or the one named id
// (404 when it has none).
func getMetrics(run Run, w http.ResponseWriter, id string) {
	snap, tainted := run.Metrics()
	list := []resource[metricAttributes]{}
	for _, m := range snap.Metrics {
		if m.Sink == nil || m.Sink.IsEmpty() {
			continue
		}
		if id != "" && m.Name == id {
			writeDoc(w, http.StatusOK, document[resource[metricAttributes]]{Data: metricResource(m, snap, tainted)})
			return
		}
		list = append(list, metricResource(m, snap, tainted))
	}
	if id != "" {
		writeError(w, http.StatusNotFound, "Not Found", "No metric with that ID was found")
		return
	}
	writeDoc(w, http.StatusOK, document[[]resource[metricAttributes]]{Data: list})
}
