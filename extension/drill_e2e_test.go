package extension_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/report"
)

// drillSmoke is ledgerSmoke, long enough for a drill and the way back.
func drillSmoke(extra string) string {
	toml := strings.Replace(ledgerSmoke(), "hold_secs = 3\n\n[[ramp]]\nusers = 2\nramp_secs = 1\nhold_secs = 3", "hold_secs = 6\n\n[[ramp]]\nusers = 2\nramp_secs = 1\nhold_secs = 6", 1)
	return toml + extra
}

// A declared restart drill (issue 42): the embedded relay closes every
// socket with 1012 "relay restarting" and refuses new ones for a second;
// the report counts exactly the closes the relay made, every client back
// with its subscriptions, and the check passes. Fails without the
// detector (no drills in the report).
func TestARestartDrillIsReported(t *testing.T) {
	toml := drillSmoke("\n[[drill]]\nat_secs = 3\nkind = \"restart\"\nduration_secs = 1\n")
	var rl *relay.Relay
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", toml, nil, func(x *relay.Relay) { rl = x }, nil)
	ds := r.report.Drills
	if len(ds) != 1 {
		r.dump(t)
		t.Fatalf("drills %+v", ds)
	}
	d := ds[0]
	if !d.Declared || d.Kind != "restart" || d.Closes["1012"] == 0 || d.Affected != d.Closes["1012"] {
		t.Fatalf("drill %+v", d)
	}
	if d.RelayClosed != d.Closes["1012"] {
		t.Errorf("the relay closed %d sockets, the clients counted %d closes", d.RelayClosed, d.Closes["1012"])
	}
	if d.Reconnected != d.Affected || d.Resubscribed != d.Affected || d.ReconnectMs.Max < 900 || d.ResubMs.Max < d.ReconnectMs.Max {
		t.Errorf("recovery %+v: every client back after the second down, resubscribed after reconnecting", d)
	}
	if d.Reasons["relay restarting"] != d.Closes["1012"] {
		t.Errorf("reasons %v", d.Reasons)
	}
	found := false
	for _, c := range r.report.Checks {
		found = found || strings.HasPrefix(c.Name, "drill restart") && c.Level == report.CheckPass
	}
	if !found || !r.report.OK {
		t.Errorf("checks %+v ok %v %q", r.report.Checks, r.report.OK, r.report.AbortReason)
	}
	if !strings.Contains(r.stdout, "drill restart at 3.0s: closes ") {
		t.Errorf("no drill block:\n%s", r.stdout)
	}
	_ = rl
}

// A disruption nobody declared: every socket closed with 1012 from the
// relay's side at a moment the scenario does not know. The report says so
// (a warning), with exactly the closes made and every client back. Fails
// without the detector: the run passes and says nothing.
func TestAnUndeclaredDisruptionIsDetected(t *testing.T) {
	var closed atomic.Int64
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", drillSmoke(""), nil, func(x *relay.Relay) {
		time.AfterFunc(6*time.Second, func() { closed.Store(int64(x.Restart(0, 0))) })
	}, nil)
	ds := r.report.Drills
	if len(ds) != 1 {
		r.dump(t)
		t.Fatalf("drills %+v", ds)
	}
	d := ds[0]
	if d.Declared || d.Kind != "detected" || d.Closes["1012"] != closed.Load() || d.Resubscribed != d.Affected || d.Affected == 0 {
		t.Fatalf("disruption %+v, the relay closed %d", d, closed.Load())
	}
	warned := false
	for _, c := range r.report.Checks {
		warned = warned || strings.HasPrefix(c.Name, "disruption at") && c.Level == report.CheckWarn
	}
	if !warned {
		t.Errorf("no warning check: %+v", r.report.Checks)
	}
}
