package k8s

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/relaymetrics"
	"github.com/buzzload/buzzload/modules/report"
)

// drillScript is a scenario of connected humans for a TestRun (issue 42's
// cluster drill): WebSocket sessions with subscriptions and messages,
// held long enough for a restart in the middle and the recovery after it.
const drillScript = `import buzz from "k6/x/buzz";
const sc = buzz.load("./buzz-test.toml");
export const options = sc.options();
export function setup() { return sc.setup(); }
export function human() { sc.human(); }
export function teardown() { sc.teardown(); }
`

const drillTOML = `run_id = "RUN_ID"
[target]
ws_url = "ws://RELAY_ADDR"
http_url = "http://RELAY_ADDR"
connect_timeout_secs = 5
[shape]
communities = 1
channels_per_community = 3
history_messages_per_channel = 5
thread_roots_per_channel = 0
seed_concurrency = 4
[population]
humans = 6
agents = 0
channels_per_member = 2
connect_rate_per_sec = 50
[human]
history_limit = 10
messages_per_hour = 1800
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 60
[abort]
max_p99_ms = 5000
max_error_rate = 0.05
`

// TestClusterRelayRestartDrill restarts the in-cluster relay while a
// TestRun of three runners holds connected humans on it: the relay drains
// as Buzz does on SIGTERM (1012 "relay restarting" to every socket) and
// refuses connections for 3 s, asked by ` + "`buzzload drill`" + ` from outside the
// run, as an operator's deploy would be. Nothing in the run declared it:
// the merged verdict must report the disruption from the clients' side
// (every socket's 1012 counted, every client back and resubscribed, the
// recovery times), that nothing acknowledged was lost, and fail on the
// connections refused while the relay was down (undeclared, they are
// judged as any errors).
//
// The restart is the relay's own (POST /operator/drill) and not a new pod
// (kubectl rollout restart): the embedded relay keeps its store in memory,
// so a new pod would start empty, where a restarted Buzz keeps its
// database. Against a real Buzz, a [[drill]] command runs kubectl.
func TestClusterRelayRestartDrill(t *testing.T) {
	_, pv := clusterFixture(t)
	bin := k6Bin(t)
	name := "drill-" + time.Now().Format("150405")
	toml := strings.NewReplacer("RUN_ID", "k8s-"+name, "RELAY_ADDR", relayIP+":"+relayPort).Replace(drillTOML)
	configMap(t, "buzzload-test", map[string]string{"buzz-test.js": drillScript, "buzz-test.toml": toml})
	kube(t, forCluster(t, "testrun.yaml", map[string]string{"RUN_NAME": name, "INSTANCES": "3", "IMAGE": e2eImage}), "apply", "-f", "-")
	testrun := "buzzload-" + name
	waitfor.UntilEvery(t, "the runners running, started", 5*time.Minute, time.Second, func() bool {
		out, _ := kubeTry("", "get", "pods", "-l", "runner=true,k6_cr="+testrun, "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
		return strings.Count(out, "=Running") == 3 && jobDone(testrun+"-starter")
	})
	// Every runner's humans connected: the relay counts six sockets (its
	// /metrics' buzz_ws_connections_active).
	waitfor.UntilEvery(t, "six humans connected", 2*time.Minute, time.Second, func() bool {
		return relayConnections(t) >= 6
	})
	time.Sleep(10 * time.Second) // the fault's moment: load flowing for a while, as the test plays it
	env := append(testEnv(bin), "BUZZLOAD_OPERATOR_KEY="+e2eOperatorKey)
	code, out, errs := run(t, time.Minute, env, filepath.Join(bin, "buzzload"), "buzzload", "drill",
		"--kind", "restart", "--duration", "3s", "--jitter", "500ms", "http://"+relayIP+":"+relayPort)
	if code != 0 {
		t.Fatalf("buzzload drill exited %d:\n%s%s", code, out, errs)
	}
	passed := waitJob(t, "buzzload-merge-"+name, 8*time.Minute)
	logs := kube(t, "", "logs", "job/buzzload-merge-"+name)
	raw, err := os.ReadFile(filepath.Join(pv, name, "merged.json"))
	if err != nil {
		t.Fatalf("no merged result (merge passed=%v): %v\n%s", passed, err, logs)
	}
	var merged struct {
		Buzz *report.Report `json:"buzz"`
	}
	if err := json.Unmarshal(raw, &merged); err != nil || merged.Buzz == nil {
		t.Fatalf("merged.json without its Buzz report (%v):\n%s", err, logs)
	}
	rep := merged.Buzz
	var d *report.DrillReport
	for i := range rep.Drills {
		if !rep.Drills[i].Declared && rep.Drills[i].Closes["1012"] > 0 {
			d = &rep.Drills[i]
		}
	}
	if d == nil {
		t.Fatalf("the merged report has no detected disruption with 1012 closes: %+v\n%s", rep.Drills, logs)
	}
	if d.Closes["1012"] < 6 || d.Affected < 6 || d.Reconnected != d.Affected || d.Resubscribed != d.Affected {
		t.Errorf("disruption %+v: want at least the six humans' sockets closed with 1012, every one back and resubscribed", d)
	}
	if d.ResubMs.Max <= 0 || d.ReconnectMs.P50 <= 0 {
		t.Errorf("disruption %+v: no recovery times", d)
	}
	if rep.Durability == nil || rep.Durability.Acknowledged == 0 || rep.Durability.Missing != 0 {
		t.Errorf("durability %+v: want the acknowledged events checked and none missing", rep.Durability)
	}
	// Nobody declared it: the connections refused while the relay was down
	// are errors like any others, and the step's connect error rate fails
	// the whole run (exit 99), beside the disruption's own warning.
	if passed || !strings.Contains(logs, "buzz_op_failed{op:connect}") || !strings.Contains(logs, "disruption at ") {
		t.Errorf("merge passed=%v; want it failed by the connect errors of the restart, the disruption reported:\n%s", passed, logs)
	}
	kube(t, "", "delete", "testrun", testrun, "--wait=false")
}

// relayConnections is the open WebSocket count the relay reports on its
// /metrics (buzz_ws_connections_active).
func relayConnections(t *testing.T) int64 {
	t.Helper()
	rd := relaymetrics.Reader{}
	s, err := rd.Read(context.Background(), relaymetrics.Source{URL: "http://" + relayIP + ":" + relayPort + "/metrics"})
	if err != nil {
		return 0
	}
	return int64(s.Values[report.SeriesConnsActive])
}
