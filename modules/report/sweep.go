package report

import (
	"fmt"
)

// The post-run sweep (issue 26, the soak tool's post-run check): after the
// traffic stops, is the relay still serving? NIP-11 answers, a fresh
// client connects and authenticates (the preflight's checks), and a
// channel read answers within the abort limit. A relay that held up
// during the run but is wedged after it fails the run.

// SweepReport is the sweep's outcome.
type SweepReport struct {
	OK     bool    `json:"ok"`
	ReadMs float64 `json:"read_ms,omitempty"` // the channel read's latency
	Slow   string  `json:"slow,omitempty"`    // the read answered, slower than max_p99_ms (a warning: one read is not a p99)
	Error  string  `json:"error,omitempty"`
}

// sweepCheck is the sweep as a check.
func sweepCheck(s *SweepReport) Check {
	switch {
	case s.OK && s.Slow != "":
		return Check{Name: "post-run sweep", Level: CheckWarn, Detail: "NIP-11, a fresh AUTH and a channel read answer, but " + s.Slow}
	case s.OK:
		return Check{Name: "post-run sweep", Level: CheckPass, Detail: fmt.Sprintf("NIP-11, a fresh AUTH and a channel read (%.1f ms) answer", s.ReadMs)}
	default:
		return Check{Name: "post-run sweep", Level: CheckFail, Detail: s.Error}
	}
}
