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
		// A shared relay: the line names none of the run's hosts or
		// channels, so with the run's scope it is another tenant's (issue 45).
		{"another tenant's", []string{"--relay-log-scope", "run"}, 0},
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
			if c.name == "another tenant's" && !strings.Contains(all.String(), "scope run: 1 error lines naming none of the run's hosts or channels not counted") {
				t.Errorf("the output does not say the scope and the line it left out:\n%s", all.String())
			}
		})
	}
	// A log path that cannot be read is refused before the run (104).
	dir := copyTestdata(t, "ops-tiny.toml")
	if code, _, errs := runBin(t, dir, nil, "run", "--relay-log", dir, "ops-tiny.toml"); code != 104 || !strings.Contains(errs, "--relay-log") {
		t.Errorf("a directory as the log: exit %d\n%s", code, errs)
	}
}

// --relay-log kubectl:NAMESPACE/SELECTOR reads the relay's pods' logs at the
// end with a read-only `kubectl logs` from the run's start (a stand-in
// kubectl records its arguments and prints an ERROR line), and a counted
// line fails the run (issue 26 item 3).
func TestRelayLogThroughKubectl(t *testing.T) {
	dir := copyTestdata(t, "ops-tiny.toml")
	argsFile := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "kubectl")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\n" +
		"echo '[pod/buzz-relay-0/relay] 2026-12-04T00:00:01Z  INFO buzz: ok'\n" +
		"echo '[pod/buzz-relay-0/relay] 2026-12-04T00:00:02Z ERROR buzz::db: pool exhausted'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runBin(t, dir, []string{"BUZZLOAD_KUBECTL=" + fake}, "run", "-q", "--report-interval", "0s",
		"--relay-log", "kubectl:buzz/app=buzz-relay", "ops-tiny.toml")
	if code != ExitRelayEvidence || !strings.Contains(out, "pool exhausted") || !strings.Contains(out, "best effort") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(string(raw))
	want := []string{"logs", "--namespace", "buzz", "--selector", "app=buzz-relay", "--all-containers", "--prefix"}
	if len(args) != 10 || strings.Join(args[:7], " ") != strings.Join(want, " ") || !strings.HasPrefix(args[7], "--since-time=2") ||
		args[8] != "--tail=-1" || args[9] != "--max-log-requests=20" {
		t.Errorf("kubectl %q", args)
	}
	if code, _, errs := runBin(t, dir, nil, "run", "--relay-log", "kubectl:nonamespace", "ops-tiny.toml"); code != 104 || !strings.Contains(errs, "NAMESPACE/SELECTOR") {
		t.Errorf("a bad kubectl source: exit %d %s", code, errs)
	}
}
