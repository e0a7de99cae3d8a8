//go:build unix

package outfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fifoPoll is how often a write to a FIFO retries opening it while no
// reader has it open: a non-blocking open is the only way to wait for a
// reader with a bound (a blocking open cannot be cancelled).
const fifoPoll = 20 * time.Millisecond

// writeFIFO writes data to the FIFO at path, waiting at most wait for a
// reader to open it and at most wait again for the reader to take it.
func writeFIFO(path string, data []byte, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var f *os.File
	for {
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENXIO) { // ENXIO: no reader yet
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no reader opened the FIFO within %s", wait)
		}
		time.Sleep(fifoPoll)
	}
	// Go puts a non-blocking FIFO in its poller, so a deadline bounds the
	// write when the reader stops reading.
	_ = f.SetWriteDeadline(time.Now().Add(wait))
	_, werr := f.Write(data)
	if errors.Is(werr, os.ErrDeadlineExceeded) {
		werr = fmt.Errorf("the FIFO's reader did not take the data within %s", wait)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// canWrite asks the kernel whether this process may write path, without
// opening it.
func canWrite(path string) error {
	if err := syscall.Access(path, 0x2 /* W_OK */); err != nil {
		return &os.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}
