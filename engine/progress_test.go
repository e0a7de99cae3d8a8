package engine

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &runner{runStart: start, now: func() time.Time { return start.Add(65200 * time.Millisecond) }}
	if got, want := r.progressLine(), "running (1m05.2s), 00/00 VUs, 0 complete and 0 interrupted iterations"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestProgressOnlyOnATerminalWithoutQuiet(t *testing.T) {
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
