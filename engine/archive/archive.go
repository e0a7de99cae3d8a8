// Package archive is buzzload's test archive (`buzzload archive -O x.tar`):
// a tar holding the script, its imports, the files its init code opened
// (buzz.load's scenario TOML among them), the -e values and the option
// layers it was made with, so that `run x.tar` and `inspect x.tar` work
// from an empty directory (docs/k6-operator.md). The layout is our own:
//
//	metadata.json      Metadata (script path, env, option layers)
//	file/<abs path>    every file the first init read
package archive

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine"
)

// Version is the metadata format's version.
const Version = 1

const (
	metadataName = "metadata.json"
	filePrefix   = "file/"
	// maxFile bounds one entry when reading (a script's data files are
	// small; a bigger entry is a wrong file, not a test).
	maxFile = 256 << 20
)

// Metadata is the archive's description of the test.
type Metadata struct {
	Version int `json:"version"`
	// Script is the main script's absolute path when archived; its content
	// is Files[Script].
	Script string `json:"script"`
	// Env is the script's __ENV when archived (the -e values).
	Env map[string]string `json:"env"`
	// ConfigFile is the -c JSON config, if one was given.
	ConfigFile     json.RawMessage `json:"configFile,omitempty"`
	ConfigFileName string          `json:"configFileName,omitempty"`
	// Layers are the K6_* environment and flag layers, in that order.
	Layers []engine.Layer `json:"layers"`
	// Options are the consolidated options, for reading; runs re-derive
	// them from the script and Layers.
	Options json.RawMessage `json:"options"`
}

// Archive is a test: its metadata and files.
type Archive struct {
	Metadata
	Files map[string][]byte // by absolute path
}

// Write writes a as a tar.
func Write(w io.Writer, a *Archive) error {
	if _, ok := a.Files[a.Script]; !ok {
		return fmt.Errorf("archive: the script %s is not among its files", a.Script)
	}
	a.Version = Version
	meta, err := json.MarshalIndent(a.Metadata, "", "  ")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	// A fixed time keeps archives of the same test byte-identical.
	mtime := time.Unix(0, 0)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(metadataName, meta); err != nil {
		return err
	}
	paths := make([]string, 0, len(a.Files))
	for p := range a.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := put(entryName(p), a.Files[p]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// entryName is where the file at absolute path p is stored.
func entryName(p string) string {
	return filePrefix + strings.TrimPrefix(filepath.ToSlash(p), "/")
}

// Read reads an archive written by Write with the default limits.
// Unreachable from the binary (deadcode), kept: the package's plain reader, what tests and tools call.
func Read(r io.Reader) (*Archive, error) { return ReadLimited(r, DefaultLimits()) }

// Limits bound what reading an archive may expand to: the total of its
// entries' sizes and the number of entries (every header counts, so a tar
// of empty entries cannot spin either). grafana/k6-operator's initializer
// runs `inspect` on user archives, so a small tar must not be able to take
// the reader down (issue 30).
type Limits struct {
	MaxBytes   int64 // BUZZLOAD_ARCHIVE_MAX_BYTES
	MaxEntries int   // BUZZLOAD_ARCHIVE_MAX_ENTRIES
}

// DefaultLimits: 256 MiB in all, 10,000 entries.
func DefaultLimits() Limits { return Limits{MaxBytes: maxFile, MaxEntries: 10000} }

// ReadLimited is Read within lim. Sparse entries (GNU sparse, in any of its
// forms) are refused: their stored bytes are not their size, the shape of
// an expansion bomb; so are duplicate names, which would let a later entry
// silently replace a file the metadata describes.
func ReadLimited(r io.Reader, lim Limits) (*Archive, error) {
	tr := tar.NewReader(r)
	a := &Archive{Files: map[string][]byte{}}
	var haveMeta bool
	var total int64
	entries := 0
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		entries++
		if entries > lim.MaxEntries {
			return nil, fmt.Errorf("archive: more than %d entries (raise BUZZLOAD_ARCHIVE_MAX_ENTRIES to read it)", lim.MaxEntries)
		}
		if isSparse(h) {
			return nil, fmt.Errorf("archive: entry %s is a sparse file, which buzzload archives never contain", h.Name)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if seen[h.Name] {
			return nil, fmt.Errorf("archive: entry %s appears twice", h.Name)
		}
		seen[h.Name] = true
		if h.Size > maxFile {
			return nil, fmt.Errorf("archive: entry %s is %d bytes, more than %d", h.Name, h.Size, maxFile)
		}
		if total += h.Size; total > lim.MaxBytes {
			return nil, fmt.Errorf("archive: entries add up to more than %d bytes at %s (raise BUZZLOAD_ARCHIVE_MAX_BYTES to read it)", lim.MaxBytes, h.Name)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxFile))
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", h.Name, err)
		}
		switch {
		case h.Name == metadataName:
			if err := json.Unmarshal(data, &a.Metadata); err != nil {
				return nil, fmt.Errorf("archive: %s: %w", metadataName, err)
			}
			haveMeta = true
		case strings.HasPrefix(h.Name, filePrefix):
			rel := path.Clean("/" + strings.TrimPrefix(h.Name, filePrefix))
			a.Files[filepath.FromSlash(rel)] = data
		}
	}
	if !haveMeta {
		return nil, errors.New("archive: no metadata.json: not a buzzload archive")
	}
	if a.Version != Version {
		return nil, fmt.Errorf("archive: metadata version %d, this buzzload reads %d", a.Version, Version)
	}
	for i := range a.Layers {
		// A layer without scenarios wrote them as null: unset, not empty.
		if sc := bytes.TrimSpace(a.Layers[i].Exec.Scenarios); bytes.Equal(sc, []byte("null")) {
			a.Layers[i].Exec.Scenarios = nil
		}
	}
	if _, ok := a.Files[filepath.FromSlash(a.Script)]; !ok {
		return nil, fmt.Errorf("archive: the script %s is missing", a.Script)
	}
	return a, nil
}

// isSparse reports a GNU sparse entry: the old GNU type 'S', or a PAX
// header carrying GNU.sparse.* records (formats 0.0, 0.1 and 1.0).
func isSparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// ReadFile reads the file at an absolute path from the archive, as the
// script host's ReadFile: nothing is read from the disk.
func (a *Archive) ReadFile(p string) ([]byte, error) {
	if b, ok := a.Files[filepath.Clean(p)]; ok {
		return b, nil
	}
	return nil, &os.PathError{Op: "open", Path: p, Err: fmt.Errorf("not in the archive (only files the script read when it was archived are)")}
}

// IsArchive reports whether the file at p is a tar (the "ustar" magic of
// its first header), so `run` and `inspect` take an archive or a script.
func IsArchive(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [512]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return bytes.HasPrefix(h[257:], []byte("ustar"))
}
