package scenario

import (
	"strings"
	"testing"
)

// A shape the machine cannot hold is refused naming the key and the memory
// it would need; one it can hold, or an unknown machine, passes (issue 43).
func TestCheckMemoryRefusesAShapeTheMachineCannotHold(t *testing.T) {
	s := Defaults()
	s.File = "huge.toml"
	s.Shape.Communities, s.Shape.ChannelsPerCommunity = 1, 100_000_000
	err := s.CheckMemory(20 << 30)
	if err == nil {
		t.Fatal("100,000,000 channels passed on a 20 GiB machine")
	}
	for _, want := range []string{"huge.toml", "shape.channels_per_community", "1 communities × 100000000 channels need about 28.0 GiB", "20.0 GiB available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	s.Shape.ChannelsPerCommunity = 1_000_000
	if err := s.CheckMemory(20 << 30); err != nil {
		t.Errorf("a million channels refused: %v", err)
	}
	s.Shape.ChannelsPerCommunity = 100_000_000
	if err := s.CheckMemory(0); err != nil {
		t.Errorf("refused with the memory unknown: %v", err)
	}
}
