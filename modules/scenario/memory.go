package scenario

import "fmt"

// The generator's memory grows with the seeded shape's channels before any
// load: their ids, the plan's per-channel state and the seed's work lists.
// Measured with /usr/bin/time on `buzzload plan` and the first 25 s of
// `buzzload run` at 10^5 and 10^6 channels (1 community, 2026-12-06): about
// 195 B (plan) and 257 B (run) a channel over a base of 40–65 MB; rounded
// up here so the estimate errs on the side of the machine.
const (
	memoryBase       = 64 << 20
	memoryPerChannel = 300
)

// MemoryNeed estimates the bytes the generator needs for s's shape, and the
// key that drives it.
func (s *Scenario) MemoryNeed() (bytes uint64, key string) {
	channels := uint64(max(0, s.Shape.Communities)) * uint64(max(0, s.Shape.ChannelsPerCommunity))
	return memoryBase + channels*memoryPerChannel, "shape.channels_per_community"
}

// CheckMemory refuses s when its estimated need is above available bytes
// (issue 43: 1 community × 100,000,000 channels passed validation and ran
// out of memory while seeding). available 0: unknown, nothing refused.
func (s *Scenario) CheckMemory(available uint64) error {
	need, key := s.MemoryNeed()
	if available == 0 || need <= available {
		return nil
	}
	return &Error{File: s.File, Problems: []Problem{{Kind: ProblemInvalid, Key: key,
		Reason: fmt.Sprintf("%d communities × %d channels need about %s of memory before any load; this machine has %s available (lower it)",
			s.Shape.Communities, s.Shape.ChannelsPerCommunity, bytesText(need), bytesText(available))}}}
}

func bytesText(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", b>>20)
	}
}
