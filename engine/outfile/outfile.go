// Package outfile writes the run's output files (--result, --report,
// --summary-export, --out json|csv, --report-html) without breaking what is
// at their path, and checks before a run that each can be written.
//
// A temp-and-rename write replaces whatever is at the path: as root,
// `--result /dev/null` turned the system's /dev/null into a regular file
// (issue 30 F3). So a rename happens only over a regular file or a new path;
// anything else (a device, a FIFO, a symlink) is written through, in place.
//
// A FIFO is never opened to check it and never waited on without a bound:
// opening one for writing blocks until a reader comes, and the check's
// open-and-close used to hand the reader its EOF, so the final write waited
// forever (issue 43 M2).
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FIFOWait bounds how long a write to a FIFO waits for a reader to open it
// and then for the reader to take the data.
const FIFOWait = 10 * time.Second

// Replace writes data to path. Over a regular file or a new path it writes
// a temporary file in the same directory and renames it into place (a
// reader never sees half a file) with mode perm; over a device, FIFO or
// symlink it opens the path and writes through it.
func Replace(path string, data []byte, perm os.FileMode) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return writeThrough(path, data)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	werr := tmp.Chmod(perm)
	if werr == nil {
		_, werr = tmp.Write(data)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}

func writeThrough(path string, data []byte) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		return writeFIFO(path, data, FIFOWait)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Check reports, before a run, why path could not be written: a directory,
// an existing file that cannot be opened for writing, or a new path whose
// directory is missing or not writable. It changes nothing at path.
func Check(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case err == nil && fi.Mode()&fs.ModeNamedPipe != 0:
		return canWrite(path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check.*")
	if err != nil {
		// The probe's random name would only confuse: name the directory.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot create a file in %s: %w", dir, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}
