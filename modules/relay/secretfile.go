package relay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// secretFile is a generated operator secret written for the operator to use
// while the relay runs. The key dies with the relay, so Close removes the
// file, but only while the path still names the file New created.
type secretFile struct {
	path string
	info fs.FileInfo // from the open descriptor, so it is the file we wrote
}

// writeSecretFile creates path exclusively (O_CREATE|O_EXCL, never
// following a symbolic link) with mode 0600 and writes secret into it.
//
// An existing file or link at path is refused, never truncated or reused:
// whoever created it may still hold it open, read it later or have pointed
// it elsewhere (a link planted in a shared /tmp). The mode returned is the
// one the descriptor reports after the write, so callers print what is true.
func writeSecretFile(path, secret string) (*secretFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s already exists: refusing to write the operator secret into a file or link someone else may have created (remove it or choose another path)", path)
		}
		return nil, err
	}
	fail := func(err error) (*secretFile, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	// O_CREATE applies the umask; 0600 needs no widening, but a chmod makes
	// the mode independent of a umask that clears owner bits.
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		return fail(err)
	}
	info, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, err
	}
	return &secretFile{path: path, info: info}, nil
}

// Mode is the file's permission bits as its descriptor reported them.
func (s *secretFile) Mode() fs.FileMode { return s.info.Mode().Perm() }

// remove deletes the file if path still names the file written (not a
// replacement someone put there since).
func (s *secretFile) remove() {
	if cur, err := os.Lstat(s.path); err == nil && os.SameFile(cur, s.info) {
		os.Remove(s.path)
	}
}
