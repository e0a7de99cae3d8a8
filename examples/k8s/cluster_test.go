package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"go.yaml.in/yaml/v3"
)

// The manifests on a real single-node Kubernetes with the real k6-operator
// (issue 31): `make k8s-e2e` (scripts/k8s-e2e/run.sh) brings the cluster
// up in a network namespace of its own, deploys the operator and runs this
// test inside that namespace with BUZZLOAD_K8S_E2E set to its state
// directory; kubectl reaches the API server on the namespace's 127.0.0.1
// and the test reaches Services through their ClusterIPs, as the pods do.

const (
	relayIP   = "10.96.100.10" // the relay Service's fixed ClusterIP
	relayPort = "7777"
	e2eImage  = "localhost/buzzload:e2e"
	// e2eOperatorKey is the relay's operator key (BUZZ_OPERATOR_SECRET) and
	// the runners' (the buzzload-operator Secret): a test key, no secret.
	e2eOperatorKey = "abababababababababababababababababababababababababababababababab"
)

// cluster is the running cluster's state directory, or a skip: the test
// only means something on the cluster make k8s-e2e starts.
func cluster(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BUZZLOAD_K8S_E2E")
	if dir == "" {
		t.Skip("runs on the cluster of `make k8s-e2e` (BUZZLOAD_K8S_E2E unset)")
	}
	return dir
}

// kube runs kubectl and fails the test when it fails.
func kube(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubeTry(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubeTry(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// relayManifest is `buzzload relay` as a Deployment and a Service of the
// image (the embedded relay, rate limits off: the test's load is small
// and bursty), the Service at a fixed ClusterIP: no DNS add-on runs here.
const relayManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: buzz-relay, labels: {app: buzz-relay}}
spec:
  replicas: 1
  selector: {matchLabels: {app: buzz-relay}}
  template:
    metadata: {labels: {app: buzz-relay}}
    spec:
      containers:
        - name: relay
          image: ` + e2eImage + `
          imagePullPolicy: Never
          args: ["relay", "--listen", "0.0.0.0:` + relayPort + `", "--rate-limit=false", "--deployment-host", "` + relayIP + `:` + relayPort + `"]
          env: [{name: BUZZ_OPERATOR_SECRET, value: "` + e2eOperatorKey + `"}] # the drill signs with it
          ports: [{containerPort: ` + relayPort + `}]
          readinessProbe: {tcpSocket: {port: ` + relayPort + `}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: buzz-relay}
spec:
  clusterIP: ` + relayIP + `
  selector: {app: buzz-relay}
  ports: [{port: ` + relayPort + `, targetPort: ` + relayPort + `}]
`

func deployRelay(t *testing.T) {
	t.Helper()
	kube(t, relayManifest, "apply", "-f", "-")
	kube(t, "", "rollout", "status", "deployment/buzz-relay", "--timeout=180s")
	waitfor.UntilEvery(t, "the relay's Service to answer", time.Minute, time.Second, func() bool {
		resp, err := http.Get("http://" + relayIP + ":" + relayPort + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
}

// resultsVolume is the PersistentVolume behind the examples' claim
// buzzload-results: a host directory of the state directory (one node).
func resultsVolume(t *testing.T, dir string) string {
	t.Helper()
	pv := filepath.Join(dir, "pv", "results")
	if err := os.MkdirAll(pv, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pv, 0o777); err != nil { // the runners run as 10001
		t.Fatal(err)
	}
	kube(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: buzzload-results}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: %s, type: Directory}
`, pv), "apply", "-f", "-")
	return pv
}

// scriptFiles are the operator play's script and fixture under the names
// testrun.yaml mounts (buzz-test.js loading ./buzz-test.toml), a fixture
// of its own per run (runID) on the in-cluster relay, and threshold the
// iterations threshold the whole run is judged on.
func scriptFiles(t *testing.T, runID, threshold string) (js, toml string) {
	t.Helper()
	js, toml = operatorScripts(t, relayIP+":"+relayPort)
	js = strings.Replace(js, `buzz.load("./distributed.toml")`, `buzz.load("./buzz-test.toml")`, 1)
	js = strings.Replace(js, `iterations: ["count>=30"]`, `iterations: ["`+threshold+`"]`, 1)
	// testrun.yaml gives the runners no -e RUN_LABEL (the play's arguments
	// do): the check on it goes.
	js = strings.Replace(js, `    "label from -e": () => data.label === "operator",`+"\n", "", 1)
	toml = strings.Replace(toml, `run_id = "operator-test"`, `run_id = "`+runID+`"`, 1)
	if !strings.Contains(js, threshold) || !strings.Contains(toml, runID) || strings.Contains(js, "label from -e") {
		t.Fatal("the operator play's script changed: update scriptFiles")
	}
	return js, toml
}

// configMap creates or replaces a ConfigMap from files.
func configMap(t *testing.T, name string, files map[string]string) {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": files})
	if err != nil {
		t.Fatal(err)
	}
	kube(t, string(doc), "apply", "-f", "-")
}

// forCluster is an example's manifests as this cluster needs them: the
// images named as imported (imagePullPolicy Never: there is no registry;
// a TestRun's init containers keep the default, IfNotPresent, which finds
// the imported image),
// and, because this is one node with two cores, no one-runner-per-node
// rule (`separate`) and no CPU or memory requests. Nothing else changes.
func forCluster(t *testing.T, file string, vars map[string]string) string {
	t.Helper()
	docs := manifests(t, file, vars)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	for _, d := range docs {
		if d["kind"] != "TestRun" { // a TestRun's init containers take no pull policy (the CRD refuses it)
			walkContainers(d, func(c map[string]any) {
				c["imagePullPolicy"] = "Never"
				delete(c, "resources")
			})
		}
		if d["kind"] == "TestRun" {
			spec := d["spec"].(map[string]any)
			delete(spec, "separate")
			spec["starter"] = map[string]any{"image": "localhost/starter:e2e", "imagePullPolicy": "Never"}
			for _, part := range []string{"initializer", "runner"} {
				if p, ok := spec[part].(map[string]any); ok {
					p["imagePullPolicy"] = "Never"
					delete(p, "resources")
				}
			}
		}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

// walkContainers calls f on every container and init container of a Job
// or Deployment template.
func walkContainers(doc map[string]any, f func(map[string]any)) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "containers" || k == "initContainers" {
					if list, ok := c.([]any); ok {
						for _, item := range list {
							if m, ok := item.(map[string]any); ok {
								f(m)
							}
						}
					}
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
}

// podExits is the exit code of the first container of each pod matching
// selector that has ended, by pod name.
func podExits(t *testing.T, selector string) map[string]int {
	t.Helper()
	var pods struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				ContainerStatuses []struct {
					State struct {
						Terminated *struct{ ExitCode int } `json:"terminated"`
					}
				} `json:"containerStatuses"`
			}
		}
	}
	if err := json.Unmarshal([]byte(kube(t, "", "get", "pods", "-l", selector, "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				out[p.Metadata.Name] = cs.State.Terminated.ExitCode
			}
		}
	}
	return out
}

// waitJob waits until the Job is Complete or Failed and says which.
func waitJob(t *testing.T, name string, d time.Duration) bool {
	t.Helper()
	ended, complete := false, false
	ok := waitfor.WithinEvery(d, 2*time.Second, func() bool {
		out, _ := kubeTry("", "get", "job", name, "-o", `jsonpath={.status.conditions[?(@.status=="True")].type}`)
		for _, c := range strings.Fields(out) {
			switch c {
			case "Complete":
				ended, complete = true, true
			case "Failed":
				ended = true
			}
		}
		return ended
	})
	if ok {
		return complete
	}
	t.Fatalf("job %s did not end in %s:\n%s", name, d, kube(t, "", "get", "jobs,pods", "-o", "wide"))
	return false
}
