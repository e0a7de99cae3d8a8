package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --relay-log FILE: only what the relay's log gains during the run counts;
// an ERROR line then fails the run with exit 112 and the line in the
// output; an allowed one does not (issue 26 item 3). Fails without the
// flag (unknown flag, exit 104).
func TestRelayLogErrorDuringTheRunFailsIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra []string
		want  int
	}{
		{"counted", nil, ExitRelayEvidence},
		{"allowed", []string{"--relay-log-allow", "disk nearly full"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTestdata(t, "ops-tiny.toml")
			logPath := filepath.Join(dir, "buzz.log")
			if err := os.WriteFile(logPath, []byte("2026-12-04T00:00:00Z ERROR before the run: never counted\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "--report-interval", "1s", "--relay-log", logPath}, c.extra...)
			cmd := exec.Command(buzzloadBin(t), append(args, "ops-tiny.toml")...)
			cmd.Dir = dir
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			sc := bufio.NewScanner(out)
			appended := false
			for sc.Scan() {
				all.WriteString(sc.Text() + "\n")
				if !appended && strings.Contains(sc.Text(), "window") {
					// The run is under way: the relay logs an error.
					f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = f.WriteString("2026-12-04T00:00:01Z ERROR buzz::db: disk nearly full on /var/lib/buzz\n")
					f.Close()
					appended = true
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatal("the run did not end")
			}
			if !appended {
				t.Fatalf("no window line to time the append by:\n%s", all.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != c.want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.want, all.String(), errb.String())
			}
			if c.want != 0 && (!strings.Contains(all.String(), "disk nearly full") || strings.Contains(all.String(), "never counted")) {
				t.Errorf("the output does not show just the run's line:\n%s", all.String())
			}
		})
	}
	// A log path that cannot be read is refused before the run (104).
	dir := copyTestdata(t, "ops-tiny.toml")
	if code, _, errs := runBin(t, dir, nil, "run", "--relay-log", dir, "ops-tiny.toml"); code != 104 || !strings.Contains(errs, "--relay-log") {
		t.Errorf("a directory as the log: exit %d\n%s", code, errs)
	}
}
