package drill

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"sort"
	"time"

	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Relay is what the embedded relay does for the declared drills
// (modules/relay drills.go).
type Relay interface {
	Restart(down, jitter time.Duration) int
	Stall(d time.Duration) int
	LimiterOutage(d time.Duration)
	SlowStore(d, delay time.Duration)
}

// Performed is a declared drill as it was done.
type Performed struct {
	Drill   scenario.Drill
	At      time.Time
	Command *report.DrillCommand
	Note    string
	Closed  int // sockets the relay closed (restart)
	// Errors are the clients' errors during the drill (Window): the
	// drill's consequences, counted apart from the [abort] rules.
	Errors map[string]int64
	// Throttled are its throttles by operation; SlowestMs the longest
	// operation that succeeded in the window (a stall's or a slow store's
	// mark), SlowestOp its name.
	Throttled map[string]int64
	SlowestMs float64
	SlowestOp string
}

// Window is how long after its moment a drill's consequences are its own:
// its duration and jitter, then Gap for the clients to come back.
func (p *Performed) Window() time.Duration {
	return secs(p.Drill.DurationSecs) + secs(p.Drill.JitterSecs) + Gap
}

// maxOutput bounds a command's output kept in the report.
const maxOutput = 4096

// Perform does drill d now: its command when it has one, else the relay's
// own drill (r nil: a real relay without a command, refused by the
// scenario's validation).
func Perform(ctx context.Context, d scenario.Drill, r Relay) Performed {
	p := Performed{Drill: d, At: time.Now()}
	dur := secs(d.DurationSecs)
	switch {
	case len(d.Command) > 0:
		p.Command = RunCommand(ctx, d.Command, secs(cmp(d.TimeoutSecs, scenario.DefaultDrillTimeoutSecs)))
	case r == nil:
		p.Note = "no embedded relay and no command: nothing was done"
	case d.Kind == "restart":
		n := r.Restart(dur, secs(d.JitterSecs))
		p.Closed = n
		if n == 0 {
			p.Note = "no socket was open to close"
		}
	case d.Kind == "stall":
		if r.Stall(dur) == 0 {
			p.Note = "no socket was open to stall"
		}
	case d.Kind == "limiter_outage":
		r.LimiterOutage(dur)
	case d.Kind == "slow_store":
		r.SlowStore(dur, time.Duration(cmp(d.DelayMs, scenario.DefaultDrillDelayMs)*float64(time.Millisecond)))
	}
	return p
}

func cmp(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// RunCommand runs argv (no shell) within timeout: its exit code, its first
// output (stdout and stderr together) and why it failed to run.
func RunCommand(ctx context.Context, argv []string, timeout time.Duration) *report.DrillCommand {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	w := &capped{b: &out, left: maxOutput}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	c := &report.DrillCommand{Argv: append([]string(nil), argv...), Output: out.String(), Ms: float64(time.Since(start).Microseconds()) / 1000}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		c.ExitCode = ee.ExitCode()
		if ctx.Err() != nil {
			c.Error = "timed out after " + timeout.String()
		}
	default:
		c.ExitCode, c.Error = -1, err.Error()
	}
	return c
}

// capped keeps the first left bytes written and drops the rest.
type capped struct {
	b    *bytes.Buffer
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	n := min(len(p), c.left)
	c.b.Write(p[:n])
	c.left -= n
	return len(p), nil
}

// Match puts each performed drill on the disruption it caused: a
// disruption goes to the latest drill performed before it (1 s of
// tolerance) whose window — its duration, jitter and Gap — holds its
// start, each drill taking at most one. That entry becomes the declared
// drill; a drill that caused none (a stall closes nothing, a relay that
// did not go down) is an entry of its own. The result is in time order.
func Match(detected []report.DrillReport, done []Performed, start time.Time) []report.DrillReport {
	out := append([]report.DrillReport(nil), detected...)
	taken := make([]bool, len(done))
	for i := range out {
		best := -1
		for k, p := range done {
			at := p.At.Sub(start).Milliseconds()
			until := at + (secs(p.Drill.DurationSecs) + secs(p.Drill.JitterSecs) + Gap).Milliseconds()
			if p.Command != nil {
				until += int64(p.Command.Ms)
			}
			if taken[k] || out[i].AtMs < at-1000 || out[i].AtMs > until {
				continue
			}
			if best < 0 || p.At.After(done[best].At) {
				best = k
			}
		}
		if best < 0 {
			continue
		}
		taken[best] = true
		p := done[best]
		out[i].Declared, out[i].Kind, out[i].Command, out[i].Note = true, p.Drill.Kind, p.Command, p.Note
		out[i].RelayClosed, out[i].Errors, out[i].Throttled = int64(p.Closed), p.Errors, p.Throttled
		out[i].SlowestMs, out[i].SlowestOp = p.SlowestMs, p.SlowestOp
	}
	var within float64
	if len(out) > 0 {
		within = out[0].RecoverWithinMs
	}
	for k, p := range done {
		if taken[k] {
			continue
		}
		at := p.At.Sub(start).Milliseconds()
		note := p.Note
		if note == "" {
			note = "no client saw a close or a failed connection"
		}
		out = append(out, report.DrillReport{Kind: p.Drill.Kind, Declared: true, AtMs: at, EndMs: at + secs(p.Drill.DurationSecs).Milliseconds(),
			Closes: map[string]int64{}, Command: p.Command, Note: note, RecoverWithinMs: within, Errors: p.Errors,
			Throttled: p.Throttled, SlowestMs: p.SlowestMs, SlowestOp: p.SlowestOp})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtMs < out[j].AtMs })
	return out
}
