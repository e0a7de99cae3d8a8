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

// The shipped local-wide exercises wide channels,
// tiers, private channels, agents with turns and the hot thread.
func TestLocalWideExercisesEveryFeature(t *testing.T) {
	s, err := Load("../../scenarios/local-wide.toml")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"wide channels", s.Shape.WideChannels > 0},
		{"tiers", len(s.Population.Tiers) > 0},
		{"private channels", s.Shape.PrivateChannels},
		{"agents", s.Population.Agents > 0},
		{"agent turns", s.Agent.Turn.PerHour > 0},
		{"hot thread authors", s.HotThread.Authors > 0},
		{"a ramp of several steps", len(s.Ramp) >= 2},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("local-wide.toml does not exercise %s", c.what)
		}
	}
}
