package relay

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The relay's Prometheus series (issue 45), named and labelled as Buzz
// names them, for what the embedded relay implements. Buzz's sources
// (block/buzz, newest versions read 2026-12-06): crates/buzz-relay/src/
// metrics.rs (the instrument names: buzz_ws_connections_total and
// _active, buzz_ws_backpressure_disconnects_total,
// buzz_ws_auth_timeouts_total, buzz_subscriptions_active, buzz_events_received_total,
// buzz_events_stored_total, buzz_events_rejected_total,
// buzz_auth_attempts_total, buzz_auth_failures_total),
// handlers/ingest.rs (buzz_events_stored_total{kind, author_type} at the
// shared WS/HTTP seam, for every accepted ingest), handlers/event.rs
// (bounded_kind_label; buzz_events_rejected_total{transport, reason}) and
// the admission module (buzz_admission_rejections_total{transport =
// "http"|"websocket", reason = "quota"|"unavailable"}; buzz-names.md §h).
// Buzz serves them on a port of their own; the embedded relay serves
// /metrics on its listener, without auth, as Buzz's port has none.

// seriesKey names one series of a family: a kind (Buzz's bounded label:
// otherKind for "other"; unused: 0) and up to two string labels. Counting
// a series allocates nothing (the ingest path runs for every event).
type seriesKey struct {
	kind int
	a, b string
}

// otherKind is the kind of every kind Buzz's bounded label calls "other".
const otherKind = -1

// labelled is a counter family's series.
type labelled struct {
	mu sync.RWMutex
	m  map[seriesKey]*atomic.Int64
}

func (l *labelled) add(k seriesKey) {
	l.mu.RLock()
	v := l.m[k]
	l.mu.RUnlock()
	if v == nil {
		l.mu.Lock()
		if l.m == nil {
			l.m = map[seriesKey]*atomic.Int64{}
		}
		if v = l.m[k]; v == nil {
			v = new(atomic.Int64)
			l.m[k] = v
		}
		l.mu.Unlock()
	}
	v.Add(1)
}

// families are the labelled counters the ingest paths count into.
type families struct {
	stored    labelled // kind, author_type
	received  labelled // kind
	rejected  labelled // transport, reason
	admission labelled // transport, reason
}

// KindLabel is Buzz's bounded_kind_label (handlers/event.rs): the kinds
// it names, every other kind "other" (the kind label of its series).
func KindLabel(k int) string {
	if boundedKind(k) == otherKind {
		return "other"
	}
	return strconv.Itoa(k)
}

// boundedKind is k when Buzz's bounded_kind_label names it, else otherKind.
func boundedKind(k int) int {
	in := func(lo, hi int) bool { return k >= lo && k <= hi }
	switch {
	case in(0, 9), k == 1059, k == 1063,
		in(8000, 8003), in(9000, 9022), in(9030, 9036),
		in(13534, 13535), in(20000, 29999),
		k == 30023, k == 30315, in(39000, 39003),
		in(40002, 40100), k == 41001, in(41010, 41012),
		in(43001, 43006), in(44100, 44101), k == 44200,
		in(45001, 45003), in(46001, 46012), k == 46020, in(46030, 46031),
		k == 48001, in(48100, 48104), k == 48106, k == 49001:
		return k
	}
	return otherKind
}

// rejectReason is Buzz's closed reason set of buzz_events_rejected_total
// ("auth", "invalid", "scope", "error") for a rejection message.
func rejectReason(msg string) string {
	switch {
	case strings.HasPrefix(msg, "invalid:"):
		return "invalid"
	case strings.HasPrefix(msg, "restricted: insufficient scope"):
		return "scope"
	case strings.HasPrefix(msg, "error:"):
		return "error"
	}
	return "auth" // restricted:, auth-required:, blocked:
}

// countIngest counts one ingest's outcome into the families.
func (r *Relay) countIngest(kind int, auth ingestAuth, res ingestResult, ephemeral bool) {
	f := &r.stats.fam
	transport, admission := "http", "http"
	if auth.ws {
		transport, admission = "ws", "websocket"
	}
	switch {
	case res.throttled:
		reason := "quota"
		if res.message == AdmissionUnavailable {
			reason = "unavailable"
		}
		f.admission.add(seriesKey{a: admission, b: reason})
	case res.accepted:
		k := boundedKind(kind)
		f.received.add(seriesKey{kind: k})
		if !ephemeral && !res.unstored {
			author := "human"
			if auth.agentOwner != "" {
				author = "agent"
			}
			f.stored.add(seriesKey{kind: k, a: author})
		}
	default:
		f.rejected.add(seriesKey{a: transport, b: rejectReason(res.message)})
	}
}

// countThrottle counts a frame or API call a rate limit refused before
// ingest (its admission rejection).
func (r *Relay) countThrottle(ws bool) {
	r.stats.throttled.Add(1)
	transport := "http"
	if ws {
		transport = "websocket"
	}
	r.stats.fam.admission.add(seriesKey{a: transport, b: "quota"})
}

// serveMetrics writes the series in Prometheus's text format.
func (r *Relay) serveMetrics(w http.ResponseWriter) {
	c := &r.stats
	fams := []*dto.MetricFamily{
		plain("buzz_ws_connections_total", dto.MetricType_COUNTER, c.connsTotal.Load()),
		plain("buzz_ws_connections_active", dto.MetricType_GAUGE, r.conns.Load()),
		plain("buzz_ws_backpressure_disconnects_total", dto.MetricType_COUNTER, c.slow.Load()),
		plain("buzz_ws_auth_timeouts_total", dto.MetricType_COUNTER, c.authTimeouts.Load()),
		plain("buzz_subscriptions_active", dto.MetricType_GAUGE, r.subscriptionsActive()),
		plain("buzz_auth_attempts_total", dto.MetricType_COUNTER, c.authOK.Load()+c.authFailed.Load()),
		plain("buzz_auth_failures_total", dto.MetricType_COUNTER, c.authFailed.Load()),
		family("buzz_events_received_total", &c.fam.received, true, "kind"),
		family("buzz_events_stored_total", &c.fam.stored, true, "kind", "author_type"),
		family("buzz_events_rejected_total", &c.fam.rejected, false, "transport", "reason"),
		family("buzz_admission_rejections_total", &c.fam.admission, false, "transport", "reason"),
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	for _, f := range fams {
		if len(f.Metric) == 0 {
			continue // no series yet: Prometheus's format has no empty family
		}
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return // the scraper went away
		}
	}
}

func plain(name string, typ dto.MetricType, v int64) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &name, Type: typ.Enum(), Metric: []*dto.Metric{sample(typ, nil, v)}}
}

func sample(typ dto.MetricType, labels []*dto.LabelPair, v int64) *dto.Metric {
	f := float64(v)
	if typ == dto.MetricType_GAUGE {
		return &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: &f}}
	}
	return &dto.Metric{Label: labels, Counter: &dto.Counter{Value: &f}}
}

// family is a labelled counter family, its series in label order; with
// kinded, the first label is the series' kind.
func family(name string, l *labelled, kinded bool, names ...string) *dto.MetricFamily {
	typ := dto.MetricType_COUNTER
	f := &dto.MetricFamily{Name: &name, Type: typ.Enum()}
	type row struct {
		values []string
		v      int64
	}
	var rows []row
	l.mu.RLock()
	for k, v := range l.m {
		values := []string{k.a, k.b}
		if kinded {
			label := "other"
			if k.kind != otherKind {
				label = strconv.Itoa(k.kind)
			}
			values = []string{label, k.a}
		}
		rows = append(rows, row{values[:len(names)], v.Load()})
	}
	l.mu.RUnlock()
	sort.Slice(rows, func(i, j int) bool {
		return strings.Join(rows[i].values, "\x00") < strings.Join(rows[j].values, "\x00")
	})
	for _, r := range rows {
		labels := make([]*dto.LabelPair, len(names))
		for i := range names {
			labels[i] = &dto.LabelPair{Name: &names[i], Value: &r.values[i]}
		}
		f.Metric = append(f.Metric, sample(typ, labels, r.v))
	}
	return f
}

// subscriptionsActive is every community's live subscriptions.
func (r *Relay) subscriptionsActive() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n int64
	for _, c := range r.comms {
		n += c.subs.active.Load()
	}
	return n
}
