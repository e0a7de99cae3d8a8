package engine

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &runner{runStart: start, now: func() time.Time { return start.Add(65200 * time.Millisecond) }}
	if got, want := r.progressLine(), "running (1m05.2s), 00/00 VUs, 0 complete and 0 interrupted iterations"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// A terminal gets its block at once (and at the stop); off a terminal nothing
// is written before the first plain interval; -q writes nothing.
func TestProgressDrawnAtStopOnlyOnATerminalWithoutQuiet(t *testing.T) {
	for _, c := range []struct {
		tty, quiet, want bool
	}{{false, false, false}, {true, true, false}, {true, false, true}} {
		var buf bytes.Buffer
		r := &runner{cfg: RunConfig{Stderr: &buf, StderrTTY: c.tty, Quiet: c.quiet}, now: time.Now, runStart: time.Now()}
		stop := r.startProgress(context.Background())
		stop()
		if got := buf.Len() > 0; got != c.want {
			t.Errorf("tty %v quiet %v: wrote %q", c.tty, c.quiet, buf.String())
		}
	}
}

// Off a terminal (a CI log, a file) progress is still reported, as plain
// lines at an interval; -q silences it.
func TestPlainProgressLinesOffTerminal(t *testing.T) {
	const src = `import { sleep } from "k6";
export const options = { vus: 2, duration: "1s" };
export default function () { sleep(0.05); }`
	for _, quiet := range []bool{false, true} {
		_, _, errs := runScript(t, src, nil, func(c *RunConfig) {
			c.Quiet = quiet
			c.PlainProgressEvery = 150 * time.Millisecond
		})
		n := strings.Count(errs, "running (")
		if quiet && n != 0 {
			t.Errorf("-q printed %d progress lines:\n%s", n, errs)
		}
		if !quiet && n < 2 {
			t.Errorf("%d progress lines in 1 s at 150 ms, want several:\n%s", n, errs)
		}
		if strings.Contains(errs, "\r") || strings.Contains(errs, "\x1b[") {
			t.Errorf("terminal control characters off a terminal: %q", errs)
		}
	}
}

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  string
	}{
		{0, "[>---------]"},
		{0.45, "[====>-----]"},
		{1, "[==========]"},
		{1.7, "[==========]"},
		{-1, "[>---------]"},
	} {
		if got := progressBar(c.share, 10); got != c.want {
			t.Errorf("progressBar(%v) = %q, want %q", c.share, got, c.want)
		}
	}
}

// On a terminal the block is redrawn in place: after the first draw every
// redraw moves the cursor back up over the lines it drew.
func TestTerminalProgressRedrawsInPlace(t *testing.T) {
	var buf syncBuf
	r := &runner{cfg: RunConfig{Stderr: &buf, StderrTTY: true}, now: time.Now, runStart: time.Now()}
	stop := r.startProgress(context.Background())
	waitOutput(t, &buf, "a second draw", func(out string) bool { return strings.Count(out, "running (") >= 2 })
	stop()
	out := buf.String()
	if n := strings.Count(out, "running ("); n < 2 {
		t.Fatalf("%d draws, want at least 2: %q", n, out)
	}
	if !strings.Contains(out, "\x1b[1A") {
		t.Fatalf("redraw does not move back over the previous block: %q", out)
	}
}

// Text written through the Console while the terminal block is drawn
// clears the block first, and the next redraw starts below the text instead
// of moving up into it.
func TestConsoleWritesAboveTheProgressBlock(t *testing.T) {
	var buf syncBuf
	con := NewConsole(&buf)
	r := &runner{cfg: RunConfig{Stderr: &buf, StderrTTY: true, Console: con}, now: time.Now, runStart: time.Now()}
	stop := r.startProgress(context.Background())
	waitOutput(t, &buf, "the first draw", func(out string) bool { return strings.Contains(out, "running (") })
	if _, err := con.Write([]byte("window block\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, &buf, "a redraw after the block", func(out string) bool {
		i := strings.Index(out, "window block\n")
		return i >= 0 && strings.Contains(out[i:], "running (")
	})
	stop()
	out := buf.String()
	i := strings.Index(out, "window block")
	if i < 0 {
		t.Fatalf("no block: %q", out)
	}
	before, after := out[:i], out[i:]
	if !strings.HasSuffix(before, "\x1b[1A\r\x1b[J") {
		t.Errorf("the block does not clear the progress first: %q", before)
	}
	redraw := after[len("window block\n"):]
	if !strings.HasPrefix(redraw, "\r"+"running (") {
		t.Errorf("the redraw after the block moves up into it: %q", redraw)
	}
}

// waitOutput polls buf until cond holds (the progress goroutine draws on a
// ticker: a fixed sleep flakes on a loaded machine), failing after 10 s.
func waitOutput(t *testing.T, buf *syncBuf, what string, cond func(string) bool) {
	t.Helper()
	if !waitfor.Within(10*time.Second, func() bool { return cond(buf.String()) }) {
		t.Fatalf("no %s within 10s: %q", what, buf.String())
	}
}

// syncBuf is a bytes.Buffer safe for the progress goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
