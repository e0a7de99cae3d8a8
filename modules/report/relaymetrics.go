package report

import (
	"fmt"
	"sort"
	"strings"
)

// The relay's own numbers beside the clients' (issue 45): its Prometheus
// series read at the start, periodically and at the end of the run
// (modules/relaymetrics), and the findings where the two disagree.

// RelayMetricsReport is what the relay's series said during the run.
type RelayMetricsReport struct {
	Sources []RelayMetricsSource `json:"sources"`
	// Series are the Buzz series (buzz_*) of every source, per label set:
	// the first and last readings and the delta (a counter's increase,
	// resets counted from zero; a gauge's end minus start).
	Series []RelaySeries `json:"series"`
	// Samples are the families' totals (summed over labels) at each
	// reading, for the plots.
	Samples []RelayMetricsSample `json:"samples,omitempty"`
	// From says which runner's readings a merged report kept (every runner
	// reads the same relay: their deltas are not added).
	From string `json:"from,omitempty"`
	// Run is the clients' side of the findings.
	Run ClientCounts `json:"run"`
	// TimelineStartUnixMs is the run's timeline start (its windows' and
	// steps' zero), for plotting the samples beside them.
	TimelineStartUnixMs int64 `json:"timeline_start_unix_ms,omitempty"`
}

// RelayMetricsSource is one place the series were read from.
type RelayMetricsSource struct {
	Source  string `json:"source"`
	Scrapes int    `json:"scrapes"` // readings that answered
	Failed  int    `json:"failed_scrapes,omitempty"`
	Error   string `json:"error,omitempty"` // the first failed reading's error
	Note    string `json:"note,omitempty"`
	// Resets: readings where a counter went down (the relay restarted, its
	// counters from zero): what it counted between the reading before and
	// its restart is not in the deltas.
	Resets int `json:"resets,omitempty"`
	// StartUnixMs and EndUnixMs are the first and last readings' times.
	StartUnixMs int64 `json:"start_unix_ms,omitempty"`
	EndUnixMs   int64 `json:"end_unix_ms,omitempty"`
}

// RelaySeries is one series of one source.
type RelaySeries struct {
	Source string            `json:"source"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Type   string            `json:"type"` // counter or gauge
	Start  float64           `json:"start"`
	End    float64           `json:"end"`
	Delta  float64           `json:"delta"`
}

// RelayMetricsSample is one reading's family totals.
type RelayMetricsSample struct {
	Source string             `json:"source"`
	UnixMs int64              `json:"t"`
	Values map[string]float64 `json:"values"`
}

// Buzz's series the findings read (crates/buzz-relay/src/metrics.rs and
// the admission module; docs/buzz-names.md).
const (
	SeriesStored      = "buzz_events_stored_total"
	SeriesRejected    = "buzz_events_rejected_total"
	SeriesAdmission   = "buzz_admission_rejections_total"
	SeriesConnsTotal  = "buzz_ws_connections_total"
	SeriesConnsActive = "buzz_ws_connections_active"
)

// Delta sums a family's deltas over every label set and source; ok is
// false when no source had the family.
func (m *RelayMetricsReport) Delta(name string) (float64, bool) {
	var sum float64
	found := false
	for _, s := range m.Series {
		if s.Name == name {
			sum += s.Delta
			found = true
		}
	}
	return sum, found
}

// answered reports whether any source answered at least twice (a delta).
func (m *RelayMetricsReport) answered() bool {
	for _, s := range m.Sources {
		if s.Scrapes >= 2 {
			return true
		}
	}
	return false
}

// ClientCounts are what the clients saw, for the findings.
type ClientCounts struct {
	// Acknowledged: events the relay acknowledged to the run's clients
	// (the seed's included, ephemeral kinds not: Buzz never stores them),
	// in all and by Buzz's kind label.
	Acknowledged       int64            `json:"acknowledged"`
	AcknowledgedByKind map[string]int64 `json:"acknowledged_by_kind,omitempty"`
	// Refused: errors and throttles the clients were answered, every
	// operation of the seed, the steps and the shutdown.
	Refused int64 `json:"refused"`
	// Connections: WebSocket connections the run saw up (every socket the
	// drills' watcher sees).
	Connections int64 `json:"connections"`
}

// clientCounts are r's side of the findings.
func clientCounts(r *Report, conns int64, acked map[string]int64) ClientCounts {
	c := ClientCounts{Connections: conns, AcknowledgedByKind: acked}
	for _, n := range acked {
		c.Acknowledged += n
	}
	add := func(ops map[string]*OpReport) {
		for _, o := range ops {
			c.Refused += o.Errors + o.Throttled + o.Expected
		}
	}
	add(r.Setup)
	for _, s := range r.Steps {
		add(s.Ops)
	}
	add(r.Shutdown.Ops)
	return c
}

// storedCheck: the relay counted at least as many events stored as it
// acknowledged, kind by kind when its series carry Buzz's kind label.
func storedCheck(m *RelayMetricsReport, c ClientCounts) Check {
	const name = "relay stored events"
	stored, ok := m.Delta(SeriesStored)
	if !ok {
		return Check{Name: name, Level: CheckSkip, Detail: "the relay exposes no " + SeriesStored}
	}
	byKind := map[string]float64{}
	labelled := false
	for _, s := range m.Series {
		if k, has := s.Labels["kind"]; has && s.Name == SeriesStored {
			byKind[k] += s.Delta
			labelled = true
		}
	}
	var short []string
	if labelled {
		for _, k := range sortedKeys(c.AcknowledgedByKind) {
			if n := c.AcknowledgedByKind[k]; byKind[k] < float64(n) {
				short = append(short, fmt.Sprintf("kind %s: %.0f stored of %d acknowledged", k, byKind[k], n))
			}
		}
	} else if stored < float64(c.Acknowledged) {
		short = append(short, fmt.Sprintf("%.0f stored of %d acknowledged", stored, c.Acknowledged))
	}
	if len(short) > 0 {
		resets := 0
		for _, s := range m.Sources {
			resets += s.Resets
		}
		if resets > 0 {
			// What it counted between its last reading and a restart is
			// lost with its counters: a shortfall cannot be told from that.
			return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("the relay restarted during the run (%d counter resets): its counts before each restart since the reading before it are lost, so fewer stored than acknowledged (%s) is not a finding", resets, strings.Join(short, "; "))}
		}
		return Check{Name: name, Level: CheckFail, Detail: "the relay counted fewer events stored than it acknowledged to the clients: " + strings.Join(short, "; ")}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf(
		"the relay counted %.0f stored, at least the %d it acknowledged to the clients (its count includes any other tenant's)", stored, c.Acknowledged)}
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// relayMetricsChecks are the findings (issue 45 point 4): stored fewer
// than acknowledged fails; rejections and connections the relay counted
// beyond the run's warn (another tenant may share the relay).
func relayMetricsChecks(m *RelayMetricsReport) []Check {
	if m == nil {
		return nil
	}
	c := m.Run
	if !m.answered() {
		why := "no source answered twice"
		for _, s := range m.Sources {
			if s.Error != "" {
				why = s.Source + ": " + s.Error
				break
			}
		}
		return []Check{{Name: "relay metrics", Level: CheckWarn, Detail: "not read: " + why}}
	}
	out := []Check{storedCheck(m, c)}
	rej, ok1 := m.Delta(SeriesRejected)
	adm, ok2 := m.Delta(SeriesAdmission)
	if ok1 || ok2 {
		if rej+adm > float64(c.Refused) {
			out = append(out, Check{Name: "relay rejections", Level: CheckWarn, Detail: fmt.Sprintf(
				"the relay counted %.0f rejections (%.0f events, %.0f admission), the clients saw %d refusals: %.0f the run never saw (another tenant, or answers lost)",
				rej+adm, rej, adm, c.Refused, rej+adm-float64(c.Refused))})
		} else {
			out = append(out, Check{Name: "relay rejections", Level: CheckPass, Detail: fmt.Sprintf(
				"the relay counted %.0f rejections, the clients saw %d refusals", rej+adm, c.Refused)})
		}
	}
	if conns, ok := m.Delta(SeriesConnsTotal); ok && c.Connections > 0 {
		if conns > float64(c.Connections) {
			out = append(out, Check{Name: "relay connections", Level: CheckWarn, Detail: fmt.Sprintf(
				"the relay accepted %.0f WebSocket connections, the run opened %d: %.0f not the run's (another tenant, or sockets the run never saw up)",
				conns, c.Connections, conns-float64(c.Connections))})
		} else {
			out = append(out, Check{Name: "relay connections", Level: CheckPass, Detail: fmt.Sprintf(
				"the relay accepted %.0f WebSocket connections, the run opened %d", conns, c.Connections)})
		}
	}
	return out
}

// relayMetricsText is the console's line: the families' deltas, the
// readings and the first failed one's error.
func relayMetricsText(b *strings.Builder, m *RelayMetricsReport, tc func(string) string) {
	if m == nil {
		return
	}
	var srcs []string
	for _, s := range m.Sources {
		state := fmt.Sprintf("%s, %d readings", tc(s.Source), s.Scrapes)
		if s.Failed > 0 {
			state += fmt.Sprintf(", %d failed: %s", s.Failed, tc(s.Error))
		}
		srcs = append(srcs, state)
	}
	totals := map[string]float64{}
	var names []string
	for _, s := range m.Series {
		if _, ok := totals[s.Name]; !ok {
			names = append(names, s.Name)
		}
		totals[s.Name] += s.Delta
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		if totals[n] != 0 {
			parts = append(parts, fmt.Sprintf("%s %+.0f", tc(strings.TrimPrefix(n, "buzz_")), totals[n]))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no change"}
	}
	note := ""
	if totals["buzz_events_received_total"] > totals[SeriesStored] {
		// A reader new to Buzz's series asks why fewer were stored: the
		// ephemeral kinds (typing, presence) and refused events are not.
		note = " (received counts typing, presence and refused events, which are not stored)"
	}
	fmt.Fprintf(b, "  relay metrics (%s): %s%s\n", strings.Join(srcs, "; "), strings.Join(parts, ", "), note)
}

// mergeRelayMetrics joins the runners' readings. Runners of one relay
// (the same target) read the same series: the readings of the runner that
// watched longest are kept (deltas do not add). Runners of relays of their
// own (each its embedded relay) read different relays: every runner's
// readings are kept, named by runner, and add up. Either way they are
// judged against every runner's clients.
func mergeRelayMetrics(out *Report, names []string, reps []*Report) *RelayMetricsReport {
	var best *RelayMetricsReport
	var from string
	var conns int64
	var acked map[string]int64
	shared := true
	var all RelayMetricsReport
	span := func(m *RelayMetricsReport) int64 {
		var w int64
		for _, s := range m.Sources {
			w = max(w, s.EndUnixMs-s.StartUnixMs)
		}
		return w
	}
	for i, r := range reps {
		m := r.RelayMetrics
		if m == nil {
			continue
		}
		if r.Target == "" || r.Target == "embedded" || r.Target != reps[0].Target {
			shared = false
		}
		conns += m.Run.Connections
		for k, n := range m.Run.AcknowledgedByKind {
			if acked == nil {
				acked = map[string]int64{}
			}
			acked[k] += n
		}
		if best == nil || span(m) > span(best) {
			best, from = m, names[i]
		}
		for _, src := range m.Sources {
			src.Source = names[i] + ": " + src.Source
			all.Sources = append(all.Sources, src)
		}
		for _, se := range m.Series {
			se.Source = names[i] + ": " + se.Source
			all.Series = append(all.Series, se)
		}
		for _, sa := range m.Samples {
			sa.Source = names[i] + ": " + sa.Source
			all.Samples = append(all.Samples, sa)
		}
	}
	if best == nil {
		return nil
	}
	cp := *best
	cp.From = from
	if !shared {
		cp = all
		cp.From = "every runner (each read a relay of its own)"
		cp.TimelineStartUnixMs = best.TimelineStartUnixMs
	}
	cp.Run = clientCounts(out, conns, acked)
	return &cp
}
