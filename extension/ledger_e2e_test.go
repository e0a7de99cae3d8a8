package extension_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/fitoken/fitokentest"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ledgerSmoke is tinySmoke without history reads on connect (a dropped
// delivery stays lost, not recovered) and without seeded posts.
func ledgerSmoke() string {
	toml := strings.Replace(tinySmoke, "history_messages_per_channel = 3", "history_messages_per_channel = 0", 1)
	toml = strings.Replace(toml, "thread_roots_per_channel = 1", "thread_roots_per_channel = 0", 1)
	return strings.Replace(toml, "history_limit = 5", "history_limit = 0", 1)
}

// The delivery ledger (issue 40): a relay that skips chosen live
// deliveries (a test fault) fails the run, and the ledger's missed pairs
// are exactly the skipped ones, with their event ids and recipients: none
// it did not skip, and every skipped one unless the ledger counted it
// unjudged. Fails without modules/ledger: the run passes, 0 errors.
func TestTheLedgerNamesEveryDroppedDelivery(t *testing.T) {
	var dropped func() []relay.Delivery
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", ledgerSmoke(), nil, func(rl *relay.Relay) {
		rl.Faults().DropDeliveries(nostr.KindStreamMessage, 3, 4)
		dropped = rl.Faults().Dropped
	}, nil)
	lg := r.report.Ledger
	if lg == nil {
		r.dump(t)
		t.Fatal("no ledger in the report")
	}
	drops := dropped()
	if len(drops) != 4 {
		t.Fatalf("the fault dropped %d deliveries", len(drops))
	}
	want := map[[2]string]bool{}
	for _, d := range drops {
		want[[2]string{d.Event, d.Recipient}] = true
	}
	got := map[[2]string]bool{}
	for _, m := range lg.Missed {
		k := [2]string{m.Event, m.Recipient}
		if !want[k] {
			t.Errorf("missed %s → %s, which the relay delivered", m.Event, m.Recipient)
		}
		got[k] = true
		if m.RecoveredMs != nil || m.ReceivedLateMs != nil {
			t.Errorf("a dropped delivery recovered or late: %+v", m)
		}
	}
	if int64(len(got))+lg.Unjudged < int64(len(want)) {
		t.Errorf("missed %d of %d dropped deliveries with %d unjudged: %+v", len(got), len(want), lg.Unjudged, lg.Missed)
	}
	if lg.Lost != int64(len(lg.Missed)) || lg.Lost == 0 || lg.Leaks != 0 {
		t.Fatalf("ledger %+v", lg.LedgerCounts)
	}
	if r.report.OK || !strings.Contains(r.report.AbortReason, "delivery ledger") {
		t.Errorf("a lost delivery passed: %q", r.report.AbortReason)
	}
	first := lg.Missed[0]
	if !strings.Contains(r.stdout, "lost "+first.Event+" → "+first.Recipient) {
		t.Errorf("the console does not name the lost pair:\n%s", r.stdout)
	}
}

// A sound relay: reach 1, nothing lost, the ledger's check passes; and a
// relay that hands one event to another community's subscriber fails the
// run naming the leak. Fails without the leak rule (sub.go breaks).
func TestTheLedgerPassesASoundRelayAndNamesALeak(t *testing.T) {
	ok := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", ledgerSmoke(), nil, nil, nil)
	lg := ok.report.Ledger
	if lg == nil || lg.Expected == 0 || lg.Lost != 0 || lg.Leaks != 0 || lg.Reach == nil || *lg.Reach != 1 || !ok.report.OK {
		ok.dump(t)
		t.Fatalf("sound relay: ledger %+v", lg)
	}
	if lg.Unjudged*20 > lg.Expected {
		t.Errorf("unjudged %d of %d expected: more than 5 %%", lg.Unjudged, lg.Expected)
	}
	if !strings.Contains(ok.stdout, "ledger: reach 1.000") {
		t.Errorf("no ledger line:\n%s", ok.stdout)
	}
	passed := false
	for _, c := range ok.report.Checks {
		passed = passed || c.Name == "delivery ledger" && c.Level == report.CheckPass
	}
	if !passed {
		t.Errorf("checks %+v", ok.report.Checks)
	}

	var leaked func() []relay.Delivery
	bad := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", ledgerSmoke(), nil, func(rl *relay.Relay) {
		rl.Faults().LeakNext(nostr.KindStreamMessage)
		leaked = rl.Faults().Leaked
	}, nil)
	ls := leaked()
	if len(ls) != 1 {
		t.Fatalf("the fault leaked %d deliveries", len(ls))
	}
	lg = bad.report.Ledger
	if lg == nil || lg.Leaks != 1 || len(lg.Leaked) != 1 || lg.Leaked[0].Event != ls[0].Event || lg.Leaked[0].Recipient != ls[0].Recipient {
		bad.dump(t)
		t.Fatalf("leaked %+v, ledger %+v", ls, lg)
	}
	if bad.report.OK || !strings.Contains(bad.report.AbortReason, ls[0].Event) {
		t.Errorf("a leak passed or is not named: %q", bad.report.AbortReason)
	}
}

// The ledger's visibility: every acknowledged channel message (1 in 1) is
// read by a member over /query from its OK on; a relay whose HTTP answers
// are held 300 ms (a test fault) shows it in the measure. Fails without
// modules/audit visibility.go (no visibility in the report).
func TestTheLedgerMeasuresVisibility(t *testing.T) {
	toml := ledgerSmoke() + "\n[verify]\nvisibility_every = 1\n"
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", toml, nil, func(rl *relay.Relay) {
		rl.Faults().SetHTTPLatency(300 * time.Millisecond)
	}, nil)
	lg := r.report.Ledger
	if lg == nil || lg.Visibility == nil {
		r.dump(t)
		t.Fatal("no visibility in the report")
	}
	v := lg.Visibility
	if v.Probed == 0 || v.Visible != v.Probed || v.TimedOut != 0 || v.Errors != 0 {
		t.Fatalf("visibility %+v", v)
	}
	if v.P50Ms < 300 || v.AtOK != v.Visible {
		t.Errorf("visibility %+v: want every message readable on the first read, held 300 ms", v)
	}
	if !strings.Contains(r.stdout, "visibility: ") {
		t.Errorf("no visibility line:\n%s", r.stdout)
	}
}

// Read-your-writes (issue 41 point 1): against a relay whose routed reads
// lag 2 s (BUZZ_REPLICA_READ_MAX_AGE_MS), the run's verdict reads — the
// seed's, the durability audit's, the sweep's — read the writer and pass;
// the visibility measure shows both: a member's routed read waits out the
// lag, its strong read has the message at the OK. Fails without
// relayclient.Strong on those reads (the audit finds the newest events
// missing).
func TestVerdictReadsReadTheWriterUnderReplicaLag(t *testing.T) {
	toml := ledgerSmoke() + "\n[verify]\nvisibility_every = 1\n"
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", toml,
		func(c *relay.Config) { c.ReplicaReadMaxAgeMs = 2000 }, nil, nil)
	if !r.report.OK {
		r.dump(t)
		t.Fatalf("the run failed under replica lag: %q", r.report.AbortReason)
	}
	if d := r.report.Durability; d == nil || d.Checked == 0 || d.Missing != 0 {
		t.Fatalf("durability %+v", d)
	}
	v := r.report.Ledger.Visibility
	if v == nil || v.Strong == nil || v.Visible == 0 || v.Strong.Visible == 0 {
		t.Fatalf("visibility %+v", v)
	}
	if v.P50Ms < 1500 || v.Strong.AtOK != v.Strong.Visible {
		t.Errorf("routed p50 %v ms (want about the 2 s lag), strong at the OK %d of %d", v.P50Ms, v.Strong.AtOK, v.Strong.Visible)
	}
}

// Issue 41 item 3: the embedded relay with its pubkey allowlist on
// (BUZZ_PUBKEY_ALLOWLIST) lists the run's identities, as an operator fills
// Buzz's pubkey_allowlist, so the run passes with no refused AUTH. Fails
// without the listing: the preflight's AUTH is refused (exit 111).
func TestAllowlistedEmbeddedRelayRunsTheRun(t *testing.T) {
	var rl *relay.Relay
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", ledgerSmoke(),
		func(c *relay.Config) { c.PubkeyAllowlist = true }, func(x *relay.Relay) { rl = x }, nil)
	if !r.report.OK {
		r.dump(t)
		t.Fatalf("the run failed with the allowlist on: %q", r.report.AbortReason)
	}
	if rl == nil || !rl.AllowlistOn() {
		t.Fatal("the embedded relay's allowlist was not on")
	}
	if s := rl.Stats(); s.AuthFailed != 0 || s.AuthOK == 0 {
		t.Errorf("AUTH: %d accepted, %d refused", s.AuthOK, s.AuthFailed)
	}
}

// Issue 41 item 2: against the embedded relay enforcing NIP-FI, with the
// run's tokens from a file ([target] nip_fi_tokens_file) and a 2-second
// session lease, the run passes: every upgrade and bridge call carries its
// identity's assertion, and each lease's end is an ordinary reconnect (no
// failed session, no disruption). Fails without the tokens (exit 111 at the
// preflight, NIP-FI named) or with the lease counted as a lost connection.
func TestNIPFIEnforcedRunHoldsThroughLeases(t *testing.T) {
	dir := t.TempDir()
	is := fitokentest.New("https://login.test", "https://relay.test")
	sc, err := scenario.Parse("tiny.toml", []byte(ledgerSmoke()))
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]string{}
	for _, pk := range sc.PubKeys() {
		toks[pk] = is.Mint(pk, time.Hour)
	}
	b, _ := json.Marshal(toks)
	path := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var rl *relay.Relay
	toml := strings.Replace(ledgerSmoke(), "[target]\n", "[target]\nnip_fi_tokens_file = \""+path+"\"\n", 1)
	r := runInline(t, dir, mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", toml,
		func(c *relay.Config) {
			c.NIPFIMode, c.NIPFIIssuers, c.NIPFIMaxAssertionAgeSecs = "enforce", is.IssuersJSON(), 3600
			c.NIPFIMaxConnectionLifetimeSecs = 2
		}, func(x *relay.Relay) { rl = x }, nil)
	if !r.report.OK {
		r.dump(t)
		t.Fatalf("the run failed under NIP-FI: %q", r.report.AbortReason)
	}
	s := rl.Stats()
	if s.AuthFailed != 0 || s.AuthOK <= int64(len(toks)) {
		t.Errorf("AUTH: %d accepted (want more than the %d identities: sessions renewed at their leases), %d refused", s.AuthOK, len(toks), s.AuthFailed)
	}
	if len(r.report.Drills) > 0 {
		t.Errorf("leases reported as disruptions: %+v", r.report.Drills)
	}
	if strings.Contains(r.stdout+r.stderr, toks[sc.PubKeys()[0]]) {
		t.Error("a token reached the output")
	}
}
