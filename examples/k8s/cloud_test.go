package k8s

import (
	"fmt"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/output/cloud/capture"
)

// cloudRun plays the cloud's side of a TestRun with `--out cloud` and of a
// PrivateLoadZone: k6-operator creates the test run (or the cloud gives a
// PLZ run one) and hands every runner its reference id and the token; the
// runners stream their metrics to K6_CLOUD_HOST, here a capture server on
// loopback that decodes what arrives.
type cloudRun struct {
	srv   *capture.Server
	token string
}

func newCloudRun(t *testing.T) *cloudRun {
	t.Helper()
	return &cloudRun{srv: capture.StartT(t), token: "operator-secret-token-1f2e"}
}

// arguments are the TestRun's spec.arguments with the cloud output.
func (c *cloudRun) arguments(args []string) []string {
	return append(append([]string(nil), args...), "--out", "cloud")
}

// env is what k6-operator sets on the runners (pkg/resources/jobs/
// runner.go): K6_CLOUD_PUSH_REF_ID, K6_CLOUD_TOKEN from the Secret, and
// the aggregation settings it decodes from "2|5s|3s|10s|10" for PLZ runs
// (cloud.DecodeAggregationConfig). K6_CLOUD_HOST points at the capture.
func (c *cloudRun) env(plz bool) []string {
	env := []string{"K6_CLOUD_HOST=" + c.srv.URL, "K6_CLOUD_PUSH_REF_ID=" + c.srv.RefID, "K6_CLOUD_TOKEN=" + c.token}
	if plz {
		env = append(env, "K6_CLOUD_API_VERSION=2", "K6_CLOUD_AGGREGATION_PERIOD=5s", "K6_CLOUD_AGGREGATION_WAIT_PERIOD=3s",
			"K6_CLOUD_METRIC_PUSH_INTERVAL=10s", "K6_CLOUD_METRIC_PUSH_CONCURRENCY=10")
	}
	return env
}

// check decodes every push and checks what the script fixes: 30
// iterations, 90 checks all passing, 30 posts and 30 reads, over the three
// runners' instance_id tags, each series of its metric's type; and that
// the runners only pushed (the operator creates and finishes the run).
func (c *cloudRun) check(t *testing.T) {
	t.Helper()
	var sets []capture.MetricSet
	for _, r := range c.srv.Requests() {
		if r.Method != "POST" || r.Path != "/v2/metrics/"+c.srv.RefID {
			t.Fatalf("a runner sent %s %s: with K6_CLOUD_PUSH_REF_ID runners only push", r.Method, r.Path)
		}
		if r.Header.Get("Authorization") != "Token "+c.token {
			t.Fatalf("push without the token: %v", r.Header)
		}
		if r.Err != nil {
			t.Fatalf("a push did not decode: %v", r.Err)
		}
		sets = append(sets, *r.Set)
	}
	if len(sets) == 0 {
		t.Fatal("no metrics arrived")
	}
	type want struct {
		typ string
		n   uint64
	}
	got := map[string]uint64{}
	instances := map[string]bool{}
	types := map[string]string{}
	for _, ms := range sets {
		for _, m := range ms.Metrics {
			if types[m.Name] != "" && types[m.Name] != m.Type {
				t.Fatalf("%s sent as %s and %s", m.Name, types[m.Name], m.Type)
			}
			types[m.Name] = m.Type
			for _, ts := range m.TimeSeries {
				labels := map[string]string{}
				for _, l := range ts.Labels {
					labels[l.Name] = l.Value
				}
				if labels["testrun_name"] != testRunName || labels["instance_id"] == "" {
					t.Fatalf("%s series without the runner's tags: %v", m.Name, labels)
				}
				instances[labels["instance_id"]] = true
				tot := capture.Totals([]capture.MetricSet{{Metrics: []capture.Metric{{Name: m.Name, Type: m.Type, TimeSeries: []capture.TimeSeries{ts}}}}})
				for _, v := range tot {
					key := m.Name
					if op := labels["op"]; op != "" {
						key += "{op:" + op + "}"
					}
					switch m.Type {
					case "METRIC_TYPE_COUNTER":
						got[key] += uint64(v.Sum)
					case "METRIC_TYPE_RATE":
						got[key] += v.Count
						got[key+".nonzero"] += v.Nonzero
					default:
						got[key] += v.Count
					}
				}
			}
		}
	}
	for key, w := range map[string]want{
		"iterations":                            {"METRIC_TYPE_COUNTER", 30},
		"checks":                                {"METRIC_TYPE_RATE", 90},
		"checks.nonzero":                        {"", 90},
		"buzz_op_duration{op:probe_post}":       {"METRIC_TYPE_TREND", 30},
		"buzz_op_duration{op:probe_read}":       {"METRIC_TYPE_TREND", 30},
		"buzz_op_failed{op:probe_post}":         {"METRIC_TYPE_RATE", 30},
		"buzz_op_failed{op:probe_post}.nonzero": {"", 0},
	} {
		if got[key] != w.n {
			t.Errorf("%s: %d arrived, want %d", key, got[key], w.n)
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(key, ".nonzero"), "{")
		if w.typ != "" && types[name] != w.typ {
			t.Errorf("%s sent as %s, want %s", name, types[name], w.typ)
		}
	}
	for n := 1; n <= parallelism; n++ {
		if !instances[fmt.Sprint(n)] {
			t.Errorf("nothing arrived from instance %d (have %v)", n, instances)
		}
	}
	// (vus is a gauge sampled once a second: a run this short may end
	// before the first, in k6 as here.)
	if types["iteration_duration"] != "METRIC_TYPE_TREND" || types["data_sent"] != "METRIC_TYPE_COUNTER" {
		t.Errorf("built-ins: iteration_duration %s, data_sent %s", types["iteration_duration"], types["data_sent"])
	}
}
