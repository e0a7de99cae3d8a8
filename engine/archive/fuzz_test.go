package archive

import (
	"bytes"
	"os"
	"testing"
)

// An archive from anyone (the operator's initializer inspects user tars)
// gets an archive or an error: no panic, and never more than the limits
// in memory (reliability.md F1).
func FuzzReadLimited(f *testing.F) {
	var buf bytes.Buffer
	if err := Write(&buf, &Archive{Metadata: Metadata{Script: "file:///s.js", Env: map[string]string{"A": "1"}},
		Files: map[string][]byte{"file:///s.js": []byte("export default function () {}")}}); err == nil {
		f.Add(buf.Bytes())
	}
	if b, err := os.ReadFile("testdata/sparse-bomb.tar"); err == nil {
		f.Add(b)
	}
	f.Add([]byte{})
	lim := Limits{MaxBytes: 1 << 20, MaxEntries: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ReadLimited(bytes.NewReader(data), lim)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		var total int64
		for _, b := range a.Files {
			total += int64(len(b))
		}
		if total > lim.MaxBytes || len(a.Files) > lim.MaxEntries {
			t.Fatalf("%d bytes in %d files passed limits %+v", total, len(a.Files), lim)
		}
	})
}
