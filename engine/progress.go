package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// progressInterval is how often the live progress line is redrawn on a
// terminal; plainProgressInterval how often a plain line is appended when
// stderr is a file or a CI log (k6 keeps reporting there too; every 10 s keeps
// a long run's log readable).
const (
	progressInterval      = 500 * time.Millisecond
	plainProgressInterval = 10 * time.Second
)

// startProgress reports progress on stderr while the run goes, unless -q: a
// line redrawn in place on a terminal, a plain line every 10 s elsewhere.
func (r *runner) startProgress(ctx context.Context) (stop func()) {
	if r.cfg.Quiet {
		return func() {}
	}
	if !r.cfg.StderrTTY {
		return r.startPlainProgress(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				fmt.Fprintf(r.cfg.Stderr, "\r%s\n", r.progressLine())
				return
			case <-t.C:
				fmt.Fprintf(r.cfg.Stderr, "\r%s\x1b[K", r.progressLine())
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *runner) startPlainProgress(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := r.cfg.PlainProgressEvery
		if every <= 0 {
			every = plainProgressInterval
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintln(r.cfg.Stderr, r.progressLine())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// progressLine is k6's summary line: `running (0m05.2s), 02/10 VUs, 120
// complete and 0 interrupted iterations`, plus each scenario's percentage.
func (r *runner) progressLine() string {
	elapsed := r.now().Sub(r.runStart)
	st := (*control)(r).Instance()
	var b strings.Builder
	fmt.Fprintf(&b, "running (%dm%04.1fs), %02d/%02d VUs, %d complete and %d interrupted iterations",
		int(elapsed.Minutes()), elapsed.Seconds()-60*float64(int(elapsed.Minutes())),
		st.VUsActive, st.VUsInitialized, st.IterationsCompleted, st.IterationsInterrupted)
	if s := r.sched.Load(); s != nil {
		for _, p := range s.Progress() {
			fmt.Fprintf(&b, " | %s %3.0f%%", p.Name, 100*p.Progress)
		}
	}
	return b.String()
}
