package relay

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics reads /metrics as Prometheus would: series → value.
func scrapeMetrics(t *testing.T, r *Relay) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + r.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			}
		}
	}
	return out
}

// TestMetricsCountWhatTheRelayDid: /metrics, without auth, counts under
// Buzz's names what the relay did: connections, events stored by kind and
// author type (not an event acknowledged and lost: the LoseAcked fault),
// rejections by transport and reason, admission rejections.
func TestMetricsCountWhatTheRelayDid(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RateLimit = true; c.WSFramesPerWindow = 7 })
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("metrics", "open")
	c.req("live", map[string]any{"kinds": []int{9}, "#h": []string{ch}})
	c.req("replaced", map[string]any{"kinds": []int{9}})
	c.req("replaced", map[string]any{"kinds": []int{7}}) // the same id: replaces, one subscription
	c.send("CLOSE", "replaced")
	c.mustPublish(ev(t, alice, 9, "one", []string{"h", ch}))
	r.Faults().LoseAcked(9, 1)
	c.mustPublish(ev(t, alice, 9, "acknowledged, lost", []string{"h", ch}))
	if ok, _ := c.publish(evAt(t, alice, 9, time.Now().Add(-time.Hour), "stale", []string{"h", ch})); ok {
		t.Fatal("a stale event was accepted")
	}
	// The eighth frame in the window (a 9007, three REQs, three EVENTs before it) is throttled: a quota rejection.
	if ok, msg := c.publish(ev(t, alice, 9, "five", []string{"h", ch})); ok || !strings.HasPrefix(msg, "rate-limited:") {
		t.Fatalf("fifth frame: %v %q, want throttled", ok, msg)
	}
	m := scrapeMetrics(t, r)
	want := map[string]float64{
		"buzz_ws_connections_total":                                         1,
		"buzz_ws_connections_active":                                        1,
		"buzz_auth_attempts_total":                                          1,
		"buzz_events_stored_total{kind=9,author_type=human}":                1,
		"buzz_events_stored_total{kind=9007,author_type=human}":             1,
		"buzz_events_received_total{kind=9}":                                2,
		"buzz_events_rejected_total{transport=ws,reason=invalid}":           1,
		"buzz_admission_rejections_total{transport=websocket,reason=quota}": 1,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, m[k], v, m)
		}
	}
}

func TestBoundedKindLabel(t *testing.T) {
	for k, want := range map[int]string{9: "9", 1059: "1059", 9007: "9007", 20001: "20001", 24200: "24200", 44200: "44200", 10002: "other", 30078: "other"} {
		if got := KindLabel(k); got != want {
			t.Errorf("kind %d: %q, want %q", k, got, want)
		}
	}
}

// The messages quota is charged at admission, before validation, as
// Buzz's (PR #7736; issue 41 item 6): two EVENTs with a bad signature use
// up a quota of two, and the valid third is throttled. Fails without the
// fix: the invalid ones cost nothing and the third is accepted.
func TestTheMessagesQuotaIsChargedBeforeValidation(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RateLimit = true; c.HumanMessagesPerMin = 2 })
	alice := key("alice")
	c := authed(t, r, alice)
	for i := range 2 {
		bad := ev(t, alice, 9, fmt.Sprintf("forged %d", i), []string{"h", "nochannel"})
		bad.Sig = strings.Repeat("0", 128)
		if ok, msg := c.publish(bad); ok || !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("a forged event: %v %q", ok, msg)
		}
	}
	if ok, msg := c.publish(ev(t, alice, 9, "valid", []string{"h", "nochannel"})); ok || !strings.HasPrefix(msg, "rate-limited:") {
		t.Fatalf("the third message: %v %q, want throttled: the forged two were charged", ok, msg)
	}
	// Ephemeral kinds are not charged.
	if ok, msg := c.publish(ev(t, alice, 20001, "typing", []string{"h", "x"})); !ok && strings.HasPrefix(msg, "rate-limited:") {
		t.Fatalf("an ephemeral event was throttled: %q", msg)
	}
}

// BenchmarkCountIngest is what the metrics add to every ingested event
// (the relay's hot path): no allocation.
func BenchmarkCountIngest(b *testing.B) {
	r := &Relay{}
	auth := ingestAuth{ws: true}
	res := accept("")
	b.ReportAllocs()
	for i := range b.N {
		r.countIngest(9000+i%20, auth, res, false)
	}
}

// Counting an ingest into the metrics allocates nothing (it runs for
// every event; the first version allocated twice: a joined key and the
// kind's label). A new series' first count does allocate, so each is
// counted once before the measure.
func TestCountIngestAllocatesNothing(t *testing.T) {
	r := &Relay{}
	auth := ingestAuth{ws: true}
	ok, bad := accept(""), reject("invalid: x")
	r.countIngest(9007, auth, ok, false)
	r.countIngest(9007, auth, bad, false)
	if n := testing.AllocsPerRun(100, func() {
		r.countIngest(9007, auth, ok, false)
		r.countIngest(9007, auth, bad, false)
		r.countThrottle(true)
	}); n > 0 {
		t.Fatalf("%v allocations per ingest", n)
	}
}
