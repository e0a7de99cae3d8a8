package scenario

import (
	"path/filepath"
	"testing"
)

// The shipped scenarios parse, validate and carry no warnings.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d scenario files, want at least 2", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if w := s.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
			t.Logf("%s: %v, peak %+v", f, s.Duration(), s.Steps()[len(s.Ramp)-1].Clients)
		})
	}
}
