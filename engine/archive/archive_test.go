package archive

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/executor"
)

func TestWriteReadRoundTripsFilesAndLayers(t *testing.T) {
	dur := 3 * time.Second
	vus := int64(4)
	seg := "0:1/2"
	a := &Archive{Metadata: Metadata{
		Script: "/src/test.js", Env: map[string]string{"WORD": "beta"},
		Layers: []engine.Layer{
			{Exec: executor.ExecutionOptions{VUs: &vus}},
			{Exec: executor.ExecutionOptions{Duration: &dur}, Options: engine.Options{ExecutionSegment: &seg, Tags: map[string]string{"k": "v"}}},
		},
		Options: json.RawMessage(`{"vus":4}`),
	}, Files: map[string][]byte{"/src/test.js": []byte("export default function () {}"), "/src/lib/x.js": []byte("x")}}
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "x.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if !IsArchive(p) {
		t.Fatal("IsArchive is false for a written archive")
	}
	b, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Files["/src/lib/x.js"]) != "x" || b.Env["WORD"] != "beta" || len(b.Layers) != 2 {
		t.Fatalf("read back %+v", b.Metadata)
	}
	// An unset scenarios option stays unset: it would otherwise override
	// the script's scenarios as an empty set.
	if b.Layers[0].Exec.Scenarios != nil || *b.Layers[0].Exec.VUs != 4 || *b.Layers[1].Exec.Duration != dur || *b.Layers[1].Options.ExecutionSegment != seg {
		t.Fatalf("layers read back %+v", b.Layers)
	}
	if _, err := b.ReadFile("/src/other.js"); !errors.Is(err, os.ErrNotExist) && err == nil {
		t.Fatal("a file that was not archived was read")
	}
	var again bytes.Buffer
	if err := Write(&again, b); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("writing the same test twice gives different bytes (%v)", err)
	}
}

func TestReadRefusesWhatIsNotABuzzloadArchive(t *testing.T) {
	if _, err := Read(bytes.NewReader([]byte("not a tar"))); err == nil {
		t.Fatal("read a non-tar")
	}
	p := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(p, []byte("export default function () {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if IsArchive(p) {
		t.Fatal("a script counted as an archive")
	}
}

// An expansion bomb is refused before anything is expanded (issue 30): a
// GNU sparse entry (1 stored byte, 256 MiB logical: the audit's shape), a
// total over the limit, too many entries, and a name that appears twice.
func TestReadRefusesBombsAndDuplicates(t *testing.T) {
	bomb, err := os.ReadFile("testdata/sparse-bomb.tar")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bytes.NewReader(bomb)); err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Fatalf("sparse entry: %v", err)
	}
	build := func(names []string, size int) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range names {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		return buf.Bytes()
	}
	lim := Limits{MaxBytes: 1000, MaxEntries: 5}
	for name, c := range map[string]struct {
		tar  []byte
		want string
	}{
		"total":     {build([]string{"file/a", "file/b", "file/c"}, 400), "more than 1000 bytes at file/c"},
		"entries":   {build([]string{"file/a", "file/b", "file/c", "file/d", "file/e", "file/f"}, 1), "more than 5 entries"},
		"duplicate": {build([]string{"file/a", "file/a"}, 1), "entry file/a appears twice"},
	} {
		if _, err := ReadLimited(bytes.NewReader(c.tar), lim); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
