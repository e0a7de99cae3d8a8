package report

import (
	"strings"
	"testing"
)

// The findings: stored fewer than acknowledged fails, naming the kind —
// unless the relay restarted during the run (its counters reset), when
// the shortfall cannot be told from what the restart lost: a warning.
// Rejections and connections beyond the run's warn.
func TestRelayMetricsFindings(t *testing.T) {
	m := &RelayMetricsReport{
		Sources: []RelayMetricsSource{{Source: "http://r/metrics", Scrapes: 5}},
		Series: []RelaySeries{
			{Name: SeriesStored, Labels: map[string]string{"kind": "9", "author_type": "human"}, Type: "counter", Delta: 40},
			{Name: SeriesStored, Labels: map[string]string{"kind": "9", "author_type": "agent"}, Type: "counter", Delta: 5},
			{Name: SeriesStored, Labels: map[string]string{"kind": "7", "author_type": "human"}, Type: "counter", Delta: 3},
			{Name: SeriesAdmission, Labels: map[string]string{"transport": "websocket", "reason": "quota"}, Type: "counter", Delta: 7},
			{Name: SeriesConnsTotal, Type: "counter", Delta: 30},
		},
		Run: ClientCounts{AcknowledgedByKind: map[string]int64{"9": 45, "7": 4}, Acknowledged: 49, Refused: 2, Connections: 20},
	}
	by := map[string]Check{}
	for _, c := range relayMetricsChecks(m) {
		by[c.Name] = c
	}
	if c := by["relay stored events"]; c.Level != CheckFail || !strings.Contains(c.Detail, "kind 7: 3 stored of 4 acknowledged") || strings.Contains(c.Detail, "kind 9") {
		t.Errorf("stored: %+v", c)
	}
	if c := by["relay rejections"]; c.Level != CheckWarn || !strings.Contains(c.Detail, "5 the run never saw") {
		t.Errorf("rejections: %+v", c)
	}
	if c := by["relay connections"]; c.Level != CheckWarn || !strings.Contains(c.Detail, "10 not the run's") {
		t.Errorf("connections: %+v", c)
	}
	m.Sources[0].Resets = 1
	if c := relayMetricsChecks(m)[0]; c.Level != CheckWarn || !strings.Contains(c.Detail, "restarted during the run") {
		t.Errorf("after a restart: %+v", c)
	}
	m.Sources[0].Scrapes = 1
	if cs := relayMetricsChecks(m); len(cs) != 1 || cs[0].Name != "relay metrics" || cs[0].Level != CheckWarn {
		t.Errorf("one reading: %+v", cs)
	}
}

// The console line says why the relay received more events than it stored
// (a new reader's first question), and only then.
func TestRelayMetricsLineExplainsReceivedOverStored(t *testing.T) {
	m := &RelayMetricsReport{
		Sources: []RelayMetricsSource{{Source: "embedded relay", Scrapes: 5}},
		Series: []RelaySeries{
			{Name: "buzz_events_received_total", Labels: map[string]string{"kind": "9"}, Type: "counter", Delta: 374},
			{Name: SeriesStored, Labels: map[string]string{"kind": "9", "author_type": "human"}, Type: "counter", Delta: 276},
		},
	}
	id := func(s string) string { return s }
	var b strings.Builder
	relayMetricsText(&b, m, id)
	if !strings.Contains(b.String(), "events_received_total +374, events_stored_total +276 (received counts typing, presence and refused events") {
		t.Errorf("line %q", b.String())
	}
	m.Series[0].Delta = 276
	b.Reset()
	relayMetricsText(&b, m, id)
	if strings.Contains(b.String(), "received counts") {
		t.Errorf("explained with nothing to explain: %q", b.String())
	}
}
