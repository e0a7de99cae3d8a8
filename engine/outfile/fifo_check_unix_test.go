//go:build unix

package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The start-up check must not open a FIFO: opening it blocked without a
// reader, and with one the check's close handed the reader its EOF, so the
// run's final write then waited forever (issue 43 M2). Fails without the
// fix: the reader reads "" and Replace never returns.
func TestCheckLeavesAFIFOsReaderWaitingForTheData(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "result.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	done := make(chan error, 1)
	go func() {
		if err := Check(fifo); err != nil {
			done <- err
			return
		}
		done <- Replace(fifo, []byte("the result"), 0o644)
	}()
	bound := time.NewTimer(2 * FIFOWait)
	defer bound.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-bound.C:
		t.Fatal("Check and Replace on a FIFO did not return")
	}
	if b := <-got; b != "the result" {
		t.Fatalf("the reader read %q", b)
	}
}

// With no reader, a write to a FIFO gives up after its bound with an error
// naming it, instead of holding the run's end forever.
func TestWriteToAFIFOWithoutReaderIsBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "nobody.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	if err := Check(fifo); err != nil {
		t.Fatalf("a writable FIFO failed the check: %v", err)
	}
	err := writeFIFO(fifo, []byte("x"), 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no reader opened the FIFO within 100ms") {
		t.Fatalf("err = %v", err)
	}
}

// A reader that opens the FIFO but never reads cannot hold the write past
// its bound either (the data is larger than the pipe's buffer).
func TestWriteToAStalledFIFOReaderIsBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "stalled.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = writeFIFO(fifo, make([]byte, 4<<20), 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not take the data within 100ms") {
		t.Fatalf("err = %v", err)
	}
}
