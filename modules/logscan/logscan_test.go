package logscan

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Only what the run appended counts; text and JSON ERROR lines both; the
// allow-list and the maximum; lines of one failure group into one message.
func TestScanCountsOnlyTheRunsErrorLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "relay.log")
	appendTo(t, p, "2026-12-04T00:00:00Z ERROR before the run\n")
	lf := Open(p)
	appendTo(t, p, "2026-12-04T01:00:00.5Z  INFO buzz: started\n"+
		"2026-12-04T01:00:01.1Z ERROR buzz::db: query failed after 31 ms for 3f1c0e6a9b7d5e4f3f1c0e6a9b7d5e4f\n"+
		"2026-12-04T01:00:02.2Z ERROR buzz::db: query failed after 7 ms for 9f1c0e6a9b7d5e4f3f1c0e6a9b7d5e4f\n"+
		`{"timestamp":"2026-12-04T01:00:03Z","level":"ERROR","message":"redis timeout"}`+"\n"+
		"2026-12-04T01:00:04Z ERROR known noise\n"+
		"2026-12-04T01:00:05Z  WARN buzz: ERRORS are fine in words\n")
	r := lf.Scan(Rules{Allow: []*regexp.Regexp{regexp.MustCompile("known noise")}})
	if r.Lines != 6 || r.Counted != 3 || r.Allowed != 1 || !r.Failed() {
		t.Fatalf("%+v", r)
	}
	if len(r.Groups) != 2 || r.Groups[0].Count != 2 || len(r.Groups[0].Samples) != 2 || !strings.Contains(r.Groups[0].Message, "query failed after <n> ms for <id>") {
		t.Errorf("groups %+v", r.Groups)
	}
	if r := Open(p).Scan(Rules{Max: 5}); r.Counted != 0 || r.Failed() {
		t.Errorf("nothing appended: %+v", r)
	}
}

// A log rotated during the run is read to its end through the old file,
// then from the start of the new one; a truncated one from its start.
func TestScanFollowsRotationAndTruncation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "relay.log")
	appendTo(t, p, "ERROR old, before\n")
	lf := Open(p)
	appendTo(t, p, "ERROR old, during\n")
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, "ERROR new, during\n")
	r := lf.Scan(Rules{})
	if r.Counted != 2 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "rotated") {
		t.Errorf("rotation: %+v", r)
	}

	q := filepath.Join(dir, "trunc.log")
	appendTo(t, q, strings.Repeat("INFO filler line\n", 20))
	lf = Open(q)
	if err := os.WriteFile(q, []byte("ERROR after the truncation\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = lf.Scan(Rules{})
	if r.Counted != 1 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "truncated") {
		t.Errorf("truncation: %+v", r)
	}

	// A log created during the run is read whole; an unreadable one says so.
	n := filepath.Join(dir, "new.log")
	lf = Open(n)
	appendTo(t, n, "ERROR first\n")
	if r := lf.Scan(Rules{}); r.Counted != 1 {
		t.Errorf("new file: %+v", r)
	}
	if r := Open(filepath.Join(dir, "never.log")).Scan(Rules{}); r.Error == "" {
		t.Errorf("a log that never existed: %+v", r)
	}
}

// A line of any length is scanned whole, in bounded memory: an ERROR past
// its first 64 KiB counts (issue 43 L3: it was missed), a marker split
// across two reads too, and the line after it still counts.
func TestLongLinesAreScannedWhole(t *testing.T) {
	for _, n := range []int{64<<10 - 10, 64 << 10, 200 << 10} {
		s := NewScanner("x", Rules{})
		log := strings.Repeat("a", n) + " ERROR at the end\nfine\n2026 ERROR buzz: after\n"
		if err := s.Feed(strings.NewReader(log)); err != nil {
			t.Fatal(err)
		}
		r := s.Result()
		if r.Lines != 3 || r.Counted != 2 || r.LongLines != 1 {
			t.Errorf("n=%d: lines %d counted %d long %d, want 3, 2, 1", n, r.Lines, r.Counted, r.LongLines)
		}
		if len(r.Groups) == 0 || len(r.Groups[0].Samples[0]) > 64<<10 {
			t.Errorf("n=%d: the long line's sample is not bounded", n)
		}
	}
}

// TestRunScopeCountsOnlyTheRunsLines: with RunScope, an error line
// counts only when it names one of the scope's terms (issue 45); the
// others are counted apart as another tenant's.
func TestRunScopeCountsOnlyTheRunsLines(t *testing.T) {
	scope := &Scope{}
	s := NewScanner("relay", Rules{RunScope: true, Scope: scope})
	scope.Add("c0.myrun.test", "9d1c2c3e-0000-4000-8000-000000000001", "")
	s.Line([]byte("2026-12-06T00:00:01Z ERROR buzz::db: pool exhausted host=c0.other.test"))
	s.Line([]byte("2026-12-06T00:00:02Z ERROR buzz::fanout: channel 9d1c2c3e-0000-4000-8000-000000000001 lagged"))
	s.Line([]byte("2026-12-06T00:00:03Z  INFO buzz: c0.myrun.test ok"))
	r := s.Result()
	if r.Scope != "run" || r.Counted != 1 || r.OutOfScope != 1 || r.Lines != 3 {
		t.Fatalf("%+v", r)
	}
	all := NewScanner("relay", Rules{})
	all.Line([]byte("2026-12-06T00:00:01Z ERROR buzz::db: pool exhausted host=c0.other.test"))
	if r := all.Result(); r.Scope != "all" || r.Counted != 1 {
		t.Fatalf("%+v", r)
	}
}
