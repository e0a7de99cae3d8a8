// k6/http through a run, against a server on loopback: what a script sees
// of a response and of a failure, as k6 v1.8.1 was observed to answer
// (docs/k6-compat.md §1: the k6/http differences closed in issue 28).
package k6http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/enginetest"
	"github.com/buzzload/buzzload/engine/metrics"
)

// runScript runs src once (1 VU, 1 iteration) and returns the result and
// the console lines (the msg of each).
func runScript(t *testing.T, src string, env map[string]string) (res engine.Result, lines []string, logged string) {
	t.Helper()
	res, logged = enginetest.Run(t, src, env)
	for _, l := range strings.Split(logged, "\n") {
		if i := strings.Index(l, `msg="`); i >= 0 && strings.HasSuffix(l, " source=console") {
			lines = append(lines, strings.TrimSuffix(l[i+5:], `" source=console`))
		}
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", res.ExitCode, res.Err, logged)
	}
	return res, lines, logged
}

// A JSON response: status, headers, body, res.json with a selector (a
// missing path is undefined, not an error), the method as written, and
// http_reqs counted with its tags.
func TestAResponseAsAScriptSeesIt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Method", r.Method)
		_, _ = w.Write([]byte(`{"a":{"b":[1,2,3]},"echo":"` + string(b) + `"}`))
	}))
	defer srv.Close()
	res, lines, _ := runScript(t, `import http from "k6/http";
export const options = { vus: 1, iterations: 1 };
export default function () {
  const r = http.request("patch", __ENV.URL + "/x", "body!", { tags: { name: "patched" } });
  console.log([r.status, r.headers["X-Method"], r.json("a.b.1"), r.json("echo"), r.json("nope") === undefined, r.request.method].join(" "));
}`, map[string]string{"URL": srv.URL})
	if want := "200 patch 2 body! true patch"; len(lines) != 1 || lines[0] != want {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	m := res.Summary.Metric("http_reqs")
	if m == nil {
		t.Fatal("no http_reqs")
	}
	if c, ok := m.Sink.(*metrics.CounterSink); !ok || c.Sum() != 1 {
		t.Errorf("http_reqs %+v, want 1", m.Sink)
	}
}

// A refused connection is not a throw: status 0, error_code 1212 and the
// bare cause in error (k6's codes: dial refused), http_req_failed 1.
func TestARefusedConnectionIsAnErrorCode(t *testing.T) {
	res, lines, logged := runScript(t, `import http from "k6/http";
export const options = { vus: 1, iterations: 1 };
export default function () {
  const r = http.get("http://127.0.0.1:1/");
  console.log(r.status + " " + r.error_code + " " + (r.error.indexOf("connection refused") >= 0));
}`, nil)
	if want := "0 1212 true"; len(lines) != 1 || lines[0] != want {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	// k6 warns of the failed request, naming it (level=warning "Request Failed").
	if !strings.Contains(logged, "Request Failed") || !strings.Contains(logged, "connection refused") {
		t.Errorf("no Request Failed warning:\n%s", logged)
	}
	m := res.Summary.Metric("http_req_failed")
	if r, ok := m.Sink.(*metrics.RateSink); !ok || r.Passes() != 1 {
		t.Errorf("http_req_failed %+v, want one failure", m.Sink)
	}
}

// An unsupported scheme fails the request with k6's generic code 1000
// (observed on k6 v1.8.1), not a throw.
func TestAnUnsupportedSchemeIs1000(t *testing.T) {
	_, lines, _ := runScript(t, `import http from "k6/http";
export const options = { vus: 1, iterations: 1 };
export default function () {
  const r = http.get("ftp://127.0.0.1/x");
  console.log(r.status + " " + r.error_code);
}`, nil)
	if want := "0 1000"; len(lines) != 1 || lines[0] != want {
		t.Fatalf("logged %q, want %q", lines, want)
	}
}
