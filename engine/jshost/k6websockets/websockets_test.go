// The module through a run (it needs a VU's event loop, metrics and
// dialer): scripts against a WebSocket server on loopback, checked by what
// they log and the ws_* metrics k6 gives (k6 docs,
// javascript-api/k6-experimental/websockets).
package k6websockets_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/enginetest"
	"github.com/buzzload/buzzload/engine/metrics"
)

// echo answers every message with "echo: " and the message.
func echo(t *testing.T) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			mt, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if err := ws.WriteMessage(mt, append([]byte("echo: "), b...)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func run(t *testing.T, src string, env map[string]string) (engine.Result, string) {
	t.Helper()
	return enginetest.Run(t, src, env)
}

// counter is a Counter metric's sum in the run's summary.
func counter(t *testing.T, res engine.Result, name string) float64 {
	t.Helper()
	m := res.Summary.Metric(name)
	if m == nil {
		t.Fatalf("no %s in the summary", name)
	}
	c, ok := m.Sink.(*metrics.CounterSink)
	if !ok {
		t.Fatalf("%s is not a counter", name)
	}
	return c.Sum()
}

// Open, send, an echoed message, close: the handlers run in that order
// with k6's ready states, and the iteration lasts until the socket closed.
func TestOpenSendMessageClose(t *testing.T) {
	res, logs := run(t, `import { WebSocket } from "k6/experimental/websockets";
export const options = { vus: 1, iterations: 1 };
export default function () {
  const ws = new WebSocket(__ENV.URL);
  console.log("connecting " + ws.readyState);
  ws.onopen = () => { console.log("open " + ws.readyState); ws.send("hi"); };
  ws.onmessage = (e) => { console.log("message " + e.data); ws.close(); };
  ws.onclose = () => { console.log("closed " + ws.readyState); };
}`, map[string]string{"URL": echo(t)})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", res.ExitCode, res.Err, logs)
	}
	var order []string
	for _, l := range strings.Split(logs, "\n") {
		if i := strings.Index(l, `msg="`); i >= 0 {
			order = append(order, strings.TrimSuffix(l[i+5:], `" source=console`))
		}
	}
	want := []string{"connecting 0", "open 1", "message echo: hi", "closed 3"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("handlers ran %q, want %q\n%s", order, want, logs)
	}
	for name, n := range map[string]float64{"ws_sessions": 1, "ws_msgs_sent": 1, "ws_msgs_received": 1} {
		if got := counter(t, res, name); got != n {
			t.Errorf("%s = %v, want %v", name, got, n)
		}
	}
}

// A refused connect is an error event with the dial's text, then close,
// and the run goes on (k6 v1.8.1 does the same: observed in issue 25).
func TestARefusedConnectIsAnErrorThenClose(t *testing.T) {
	res, logs := run(t, `import { WebSocket } from "k6/experimental/websockets";
export const options = { vus: 1, iterations: 1 };
export default function () {
  const ws = new WebSocket("ws://127.0.0.1:1/");
  ws.onerror = (e) => { console.log("error " + e.error); };
  ws.onclose = () => { console.log("closed " + ws.readyState); };
}`, nil)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", res.ExitCode, res.Err, logs)
	}
	e, c := strings.Index(logs, "error "), strings.Index(logs, "closed 3")
	if e < 0 || c < e || !strings.Contains(logs, "connection refused") {
		t.Fatalf("want an error naming the refusal, then closed 3:\n%s", logs)
	}
}
