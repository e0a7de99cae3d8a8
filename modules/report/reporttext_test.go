package report

import (
	"strings"
	"testing"
)

// A relay's error text, an op name from a script and a reason cannot drive
// the terminal: the summary shows their control characters escaped
// (reliability.md F4: a relay cleared the screen and printed "result: ok").
// Fails without termtext.Clean in reporttext.go.
func TestReportTextEscapesNetworkAndScriptText(t *testing.T) {
	forged := "error: \r\x1b[K\x1bc\x1b[H\x1b[J  result: ok\r\n  (forged by the relay)\x1b[m"
	op := "post\x1b]0;PWNED\a"
	ops := map[string]*OpReport{op: {Count: 2, Errors: 1, ErrorTexts: []ErrorText{{Text: forged, Count: 1}}}}
	r := &Report{RunID: "r\x1b[2J", Scenario: "s", AbortReason: "p99 of " + op + " too high\n  result: ok",
		Steps: []StepReport{{Reached: true, Ops: ops, AbortReason: forged}}, Warnings: []string{"w\u009b2J"}}
	out := r.Text()
	for _, bad := range []string{"\x1b", "\r", "\a", "\u009b", "\n  result: ok"} {
		if strings.Contains(out, bad) {
			t.Errorf("summary contains %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{`\x1bc\x1b[H\x1b[J  result: ok\r\n`, `post\x1b]0;PWNED\a`, `r\x1b[2J`, `w\u009b2J`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks the escaped %s:\n%s", want, out)
		}
	}
	w := WindowReport{Ops: map[string]*WindowOp{op: {Count: 1}}}
	if s := w.Text("run\x1bc"); strings.Contains(s, "\x1b") {
		t.Errorf("window block contains ESC: %q", s)
	}
}

// The latency from the due time is printed where sending late shows (5 ms
// and 10 % over the send's p99), not for every scheduled op of a quiet run.
func TestDueLatencyLineOnlyWhereLatenessShows(t *testing.T) {
	ops := map[string]*OpReport{
		"quiet": {Count: 10, Scheduled: 10, P99Ms: 1.0, DueP99Ms: 2.5},
		"late":  {Count: 10, Scheduled: 10, P99Ms: 20, DueP99Ms: 90, LagP99Ms: 70},
		"slow":  {Count: 10, Scheduled: 10, P99Ms: 400, DueP99Ms: 406},
	}
	out := (&Report{RunID: "r", Scenario: "s", Steps: []StepReport{{Reached: true, Ops: ops}, {Index: 1, Reached: true, Ops: ops}}}).Text()
	// The columns are explained once, under the first table.
	if strings.Count(out, "thr: refused by the relay's quotas") != 1 || strings.Index(out, "thr: refused") > strings.Index(out, "step 1") {
		t.Errorf("legend:\n%s", out)
	}
	if strings.Count(out, "~ late: 10 scheduled, p99 90.0 ms from the due time (20.0 from the send)") != 2 ||
		strings.Contains(out, "~ quiet") || strings.Contains(out, "~ slow") {
		t.Errorf("due-time lines:\n%s", out)
	}
}

// A quiet generator's CPU reads 0.5 %, not 0 %; a busy one's without
// decimals.
func TestGeneratorLineShowsSmallShares(t *testing.T) {
	for cpu, want := range map[float64]string{0.5: "this process's CPU 0.5 % of 2 cores", 87.4: "this process's CPU 87 % of 2 cores"} {
		r := &Report{RunID: "r", Scenario: "s", Steps: []StepReport{{Reached: true, Generator: &GeneratorReport{CPUPct: cpu, Cores: 2}}}}
		if out := r.Text(); !strings.Contains(out, want) {
			t.Errorf("%v: want %q in\n%s", cpu, want, out)
		}
	}
}

// The checks line names what was skipped (a newcomer asked which).
func TestChecksLineNamesTheSkipped(t *testing.T) {
	got := checksText([]Check{{Name: "thresholds", Level: CheckPass}, {Name: "never-acknowledged events", Level: CheckSkip, Detail: "every publish acknowledged"},
		{Name: "durability audit", Level: CheckSkip}})
	if want := "checks: 1 pass / 0 fail / 0 warn / 2 skipped (never-acknowledged events, durability audit)"; !strings.Contains(got, want) {
		t.Errorf("checks line %q, want %q", got, want)
	}
}

// The durability line says which events it counts: beside a publish count
// several times larger (typing, presence), a bare "38 events acknowledged"
// read as events lost (review of issue 43's work).
func TestDurabilityLineSaysWhatItAudits(t *testing.T) {
	r := &Report{OK: true, Durability: &DurabilityReport{Acknowledged: 38, Checked: 38, FoundAuthor: 38, FoundMember: 38}}
	if got := r.Text(); !strings.Contains(got, "durability: 38 acknowledged channel events of regular kinds (typing, presence and deletions are not audited), 38 read back") {
		t.Fatalf("durability line:\n%s", got)
	}
}

// A seed of open channels has no member lists: the summary says so rather
// than "0 members", which read like a seed that failed; a private seed
// counts its members. Fails without the open-channel wording.
func TestSeedLineSaysOpenChannelsHaveNoMembers(t *testing.T) {
	open := (&Report{Seed: &SetupResult{Communities: 2, Channels: 8, Posts: 208, Embedded: true}}).Text()
	if !strings.Contains(open, "seed: 2 communities, 8 open channels (no member lists), 208 posts") || strings.Contains(open, "0 members") {
		t.Errorf("open channels:\n%s", open)
	}
	private := (&Report{Seed: &SetupResult{Communities: 1, Channels: 2, Members: 6, Embedded: true}}).Text()
	if !strings.Contains(private, "2 channels, 6 members, 0 posts") {
		t.Errorf("private channels:\n%s", private)
	}
}
