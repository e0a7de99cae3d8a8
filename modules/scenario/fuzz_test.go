package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// Bad input gets an error, never a panic; a scenario that parses answers
// every derived question.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../scenarios/*.toml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(plainShape))
	f.Add([]byte(rampShape))
	f.Add([]byte(inversionShapes[1].src))
	f.Add([]byte("run_id = \"t\"\n[population]\ntiers = [1, {fraction = 2}]\n[[ramp]]\nusers = 1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.toml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if ScaleCount(s.unit(), s.PeakUsers()) > 20000 || s.Shape.Communities*s.Shape.ChannelsPerCommunity > 2000 {
			return // valid but too big to walk here
		}
		_ = s.Warnings()
		_ = s.Steps()
		for k := Kind(0); k < NumKinds; k++ {
			_ = s.Stages(k, Shard{Index: 1, Count: 3})
		}
		for _, ch := range s.Channels() {
			for g := range s.ChannelMembers(ch) {
				if !s.Active(g, s.PeakUsers()) {
					t.Fatalf("%v member %d does not run", ch, g)
				}
			}
			_ = s.ChannelID(ch)
		}
		for g := 0; g < 50; g++ {
			_ = s.ActivityWeights(g)
		}
		_ = s.Endpoint(0)
	})
}
