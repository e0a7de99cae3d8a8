package cloud

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/cloud/capture"
	"github.com/buzzload/buzzload/internal/waitfor"
)

type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.list = append(w.list, s); w.mu.Unlock() }
func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.list, "\n")
}

// testOutput is an output with fast periods against host.
func testOutput(t *testing.T, host string, env map[string]string) (*Output, *warnings) {
	t.Helper()
	e := map[string]string{"K6_CLOUD_HOST": host, "K6_CLOUD_TOKEN": "tok-secret-77",
		"K6_CLOUD_AGGREGATION_PERIOD": "1s", "K6_CLOUD_AGGREGATION_WAIT_PERIOD": "1s", "K6_CLOUD_METRIC_PUSH_INTERVAL": "50ms"}
	for k, v := range env {
		e[k] = v
	}
	cfg, err := ParseConfig(Inputs{Env: e, ScriptPath: "/x/test.js"})
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	o, err := New(Params{Config: cfg, MaxVUs: 3, Duration: 90 * time.Second, Version: "test", Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	o.client.retryWait = 10 * time.Millisecond
	return o, w
}

func counterSamples(t *testing.T, n int, at time.Time) []metrics.Sample {
	t.Helper()
	reg := metrics.NewRegistry()
	m, err := reg.New("things", metrics.Counter, metrics.Default)
	if err != nil {
		t.Fatal(err)
	}
	tags := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "s"})
	out := make([]metrics.Sample, n)
	for i := range out {
		out[i] = metrics.Sample{Metric: m, Tags: tags, Time: at, Value: 1}
	}
	return out
}

func TestPushesOnlyToTheGivenRun(t *testing.T) {
	srv := capture.StartT(t)
	o, _ := testOutput(t, srv.URL, map[string]string{"K6_CLOUD_PUSH_REF_ID": "777"})
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	o.AddSamples(counterSamples(t, 10, time.Now()))
	o.RunEnded(0, false, nil)
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("nothing pushed")
	}
	var sum float64
	for _, r := range reqs {
		if r.Path != "/v2/metrics/777" || r.Set == nil {
			t.Fatalf("with K6_CLOUD_PUSH_REF_ID only pushes are sent: %s %s", r.Method, r.Path)
		}
		sum += capture.Totals([]capture.MetricSet{*r.Set})["things{scenario=s}"].Sum
	}
	if sum != 10 {
		t.Fatalf("things: %v, want 10", sum)
	}
	if o.Description() != "cloud (https://app.k6.io/runs/777)" {
		t.Fatalf("description %q", o.Description())
	}
}

func TestTestRunIDFromTheScriptEnvironmentIsFinished(t *testing.T) {
	srv := capture.StartT(t)
	cfg, err := ParseConfig(Inputs{Env: map[string]string{"K6_CLOUD_HOST": srv.URL}, ScriptPath: "a.js",
		ScriptEnv: map[string]string{"K6_CLOUDRUN_TEST_RUN_ID": "55"}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Params{Config: cfg, Duration: time.Second, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	o.AddSamples(counterSamples(t, 1, time.Now()))
	o.RunEnded(0, false, nil)
	_ = o.Stop()
	reqs := srv.Requests()
	if reqs[0].Path != "/v2/metrics/55" || reqs[len(reqs)-1].Path != "/v1/tests/55" {
		t.Fatalf("requests: %v", reqs)
	}
}

// A cloud that is not there costs the metrics, not the run: one warning,
// Start and Stop succeed, the samples are counted.
func TestADownCloudCostsTheMetricsNotTheRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "http://" + ln.Addr().String()
	ln.Close()
	o, w := testOutput(t, host, nil)
	if err := o.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	o.AddSamples(counterSamples(t, 7, time.Now()))
	if err := o.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st := o.Stats(); st.SamplesDropped != 7 {
		t.Fatalf("stats %+v", st)
	}
	if got := w.all(); !strings.Contains(got, "could not be created") || !strings.Contains(got, "7 samples dropped") {
		t.Fatalf("warnings:\n%s", got)
	}
}

// Refused pushes are retried, counted and reported once; the token never
// shows, even when the cloud echoes it.
func TestRefusedPushesAreCountedAndTheTokenNeverShows(t *testing.T) {
	srv := capture.StartT(t)
	srv.RefusePushes(http.StatusInternalServerError, `{"error":{"code":9,"message":"bad token tok-secret-77"}}`)
	o, w := testOutput(t, srv.URL, nil)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	o.AddSamples(counterSamples(t, 5, now.Add(-3*time.Second)))
	waitfor.Until(t, "the first period's push to fail (3 attempts)", 20*time.Second, func() bool { return o.Stats().FailedPushes >= 1 })
	o.AddSamples(counterSamples(t, 5, now))
	o.RunEnded(99, false, map[string]map[string]bool{"things": {"count<1": true}})
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	pushes := srv.Pushes()
	st := o.Stats()
	if st.FailedPushes < 2 || len(pushes) != 3*int(st.FailedPushes) || st.PointsLost != st.FailedPushes {
		t.Fatalf("%d requests; stats %+v (3 attempts a push, one series a push)", len(pushes), st)
	}
	got := w.all()
	if strings.Count(got, "failed to push metrics") != 1 || !strings.Contains(got, "pushes failed") {
		t.Fatalf("want one warning and the total:\n%s", got)
	}
	if strings.Contains(got, "tok-secret-77") || !strings.Contains(got, "failed to push metrics to the cloud: (500/E9) bad token ***;") {
		t.Fatalf("the token shows, or the cloud's error lost its status and code:\n%s", got)
	}
	for _, r := range pushes[:3] {
		if r.Header.Get("K6-Idempotency-Key") != pushes[0].Header.Get("K6-Idempotency-Key") {
			t.Fatal("a retried push must carry the same idempotency key")
		}
	}
	finish := srv.Requests()[len(srv.Requests())-1]
	if finish.Path != "/v1/tests/4242" || !strings.Contains(string(finish.Body), `"result_status":1`) {
		t.Fatalf("finish: %s %s", finish.Path, finish.Body)
	}
}

// The cloud's "stop sending" (403, code 4) stops the pushes, as in k6.
func TestForbiddenCode4StopsPushing(t *testing.T) {
	srv := capture.StartT(t)
	srv.RefusePushes(http.StatusForbidden, `{"error":{"code":4,"message":"test run aborted"}}`)
	o, w := testOutput(t, srv.URL, nil)
	stopped := make(chan error, 1)
	o.SetStopRun(func(err error) { stopped <- err })
	_ = o.Start()
	now := time.Now()
	o.AddSamples(counterSamples(t, 1, now.Add(-3*time.Second)))
	waitfor.Until(t, "the first period's push", 20*time.Second, func() bool { return len(srv.Pushes()) >= 1 })
	o.AddSamples(counterSamples(t, 1, now))
	_ = o.Stop()
	if n := len(srv.Pushes()); n != 1 {
		t.Fatalf("%d pushes after a 403 E4, want 1", n)
	}
	if !strings.Contains(w.all(), "(403/E4) test run aborted") {
		t.Fatalf("warnings:\n%s", w.all())
	}
	select {
	case <-stopped:
		t.Fatal("the run was stopped without K6_CLOUD_STOP_ON_ERROR")
	default:
	}
}

// A cloud that takes the requests and never answers holds the run's end
// for the stop budget, not for three attempts of K6_CLOUD_TIMEOUT each;
// the cut pushes are counted.
func TestASilentCloudDoesNotHoldTheEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and read, never answer
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 1<<16)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	// Creating the run waits for the create budget, then the run goes on.
	c, cw := testOutput(t, "http://"+ln.Addr().String(), nil)
	c.createBudget = 300 * time.Millisecond
	start := time.Now()
	if err := c.Start(); err != nil || time.Since(start) > 5*time.Second || !strings.Contains(cw.all(), "could not be created") {
		t.Fatalf("create against a silent cloud: %v after %v\n%s", err, time.Since(start), cw.all())
	}
	_ = c.Stop()
	o, w := testOutput(t, "http://"+ln.Addr().String(), map[string]string{"K6_CLOUD_PUSH_REF_ID": "9"})
	o.stopBudget, o.finishBudget = 300*time.Millisecond, 100*time.Millisecond
	_ = o.Start()
	o.AddSamples(counterSamples(t, 3, time.Now()))
	start = time.Now()
	_ = o.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v", d)
	}
	if st := o.Stats(); st.PointsLost != 1 || st.FailedPushes != 1 {
		t.Fatalf("stats %+v\n%s", st, w.all())
	}
}

// Redacting the token keeps the cloud's status and code (a 403 E4 that
// echoes the token still stops the pushes).
func TestRedactKeepsTheCloudsError(t *testing.T) {
	c := &client{token: "tok-1"}
	var ae *APIError
	err := c.redact(&APIError{Status: 403, Code: 4, Message: "run tok-1 aborted"})
	if !errors.As(err, &ae) || ae.Code != 4 || err.Error() != "(403/E4) run *** aborted" {
		t.Fatalf("redacted: %#v %q", err, err)
	}
}

// The cloud's answer to the create call overrides the aggregation, as k6
// applies it: the pushes carry its period.
func TestTheCloudsConfigOverridesTheAggregation(t *testing.T) {
	srv := capture.StartT(t)
	srv.Config = `{"aggregationPeriod":"2s","metricPushInterval":"100ms"}`
	o, _ := testOutput(t, srv.URL, nil)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	o.AddSamples(counterSamples(t, 1, time.Now()))
	_ = o.Stop()
	pushes := srv.Pushes()
	if len(pushes) == 0 || pushes[0].Set == nil || pushes[0].Set.AggregationPeriod != 2 || o.cfg.MetricPushInterval != 100*time.Millisecond {
		t.Fatalf("pushes %v, push interval %v: the override was not applied", pushes, o.cfg.MetricPushInterval)
	}
}
