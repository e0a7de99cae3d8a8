//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const fifoScript = `export const options = { vus: 1, iterations: 3 };
export default function () {}
`

func fifoDir(t *testing.T) (dir, fifo string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.js"), []byte(fifoScript), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo = filepath.Join(dir, "result.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	return dir, fifo
}

// `--result` to a FIFO with a reader ends the run normally, exit 0, and the
// reader gets the whole result (issue 43 M2). Before the fix the start-up
// check's open and close gave the reader its EOF and the final write blocked
// forever: this test then fails on its context's bound.
func TestResultToAFIFOEndsTheRun(t *testing.T) {
	dir, fifo := fifoDir(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buzzloadBin(t), "run", "-q", "--result", fifo, "s.js")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var res struct {
		Run struct{ ExitCode int } `json:"run"`
	}
	if b := <-got; json.Unmarshal(b, &res) != nil {
		t.Fatalf("the reader got %d bytes, not a result file: %.200q", len(b), b)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
}

// A signal at the run's end, while the result waits on a FIFO nobody
// reads, does not leave the process hanging: it ends with an error naming
// why (the signal, or the FIFO's bound). Before the fix it waited forever
// and this test failed on its context's bound.
func TestSignalAtTheEndWithAnUnreadFIFOEndsTheProcess(t *testing.T) {
	dir, fifo := fifoDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buzzloadBin(t), "run", "--result", fifo, "s.js")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The end-of-test summary is printed just before the files are written.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "iterations") {
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the process did not end after the signal\n%s", errb.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("exit: %v, want a failure: the result was never read\n%s", err, errb.String())
	}
	e := errb.String()
	if !strings.Contains(e, "signal while writing the run's files") && !strings.Contains(e, "no reader opened the FIFO within") {
		t.Fatalf("stderr does not say why:\n%s", e)
	}
}
