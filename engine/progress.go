package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
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
// block redrawn in place on a terminal (a summary line and a bar per
// scenario), a plain line every 10 s elsewhere.
func (r *runner) startProgress(ctx context.Context) (stop func()) {
	if r.cfg.Quiet {
		return func() {}
	}
	if !r.cfg.StderrTTY {
		return r.startPlainProgress(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	con := r.cfg.Console
	if con == nil {
		con = NewConsole(nil)
	}
	go func() {
		defer close(done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		draw := func() {
			// Move back over the previous block, then redraw every line
			// (k6 draws the same way: a summary line and a bar per scenario).
			con.mu.Lock()
			defer con.mu.Unlock()
			var b strings.Builder
			if con.drawn > 0 {
				fmt.Fprintf(&b, "\x1b[%dA", con.drawn)
			}
			lines := r.progressBlock()
			for _, l := range lines {
				b.WriteString("\r" + l + "\x1b[K\n")
			}
			con.drawn = len(lines)
			fmt.Fprint(r.cfg.Stderr, b.String())
		}
		for {
			select {
			case <-ctx.Done():
				draw()
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// progressBlock is the terminal view: the summary line, then per scenario
// its bar, share done, active VUs and completed iterations.
func (r *runner) progressBlock() []string {
	lines := []string{r.summaryLine()}
	if s := r.sched.Load(); s != nil {
		ps := s.Progress()
		width := 0
		for _, p := range ps {
			width = max(width, len(p.Name))
		}
		for _, p := range ps {
			lines = append(lines, fmt.Sprintf("%-*s %s %3.0f%% %02d VUs %d complete", width, p.Name,
				progressBar(p.Progress, 30), 100*p.Progress, p.ActiveVUs, p.Completed))
		}
	}
	return lines
}

// progressBar draws a share in [0,1] as [=====>----] of the given width.
func progressBar(share float64, width int) string {
	share = min(max(share, 0), 1)
	full := int(share * float64(width))
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < width; i++ {
		switch {
		case i < full:
			b.WriteByte('=')
		case i == full && share < 1:
			b.WriteByte('>')
		default:
			b.WriteByte('-')
		}
	}
	b.WriteByte(']')
	return b.String()
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
	var b strings.Builder
	b.WriteString(r.summaryLine())
	if s := r.sched.Load(); s != nil {
		for _, p := range s.Progress() {
			fmt.Fprintf(&b, " | %s %3.0f%%", p.Name, 100*p.Progress)
		}
	}
	return b.String()
}

// summaryLine is the first part: elapsed time, VUs and iterations.
func (r *runner) summaryLine() string {
	elapsed := r.now().Sub(r.runStart)
	st := (*control)(r).Instance()
	var b strings.Builder
	fmt.Fprintf(&b, "running (%dm%04.1fs), %02d/%02d VUs, %d complete and %d interrupted iterations",
		int(elapsed.Minutes()), elapsed.Seconds()-60*float64(int(elapsed.Minutes())),
		st.VUsActive, st.VUsInitialized, st.IterationsCompleted, st.IterationsInterrupted)
	return b.String()
}

// Console is a writer for text a run prints while the terminal progress
// block is drawn (the Buzz module's report windows): each write first
// clears the block, so the text is not drawn over, and the next redraw puts
// the block below it. Off a terminal, or without progress, it only writes.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	drawn int // lines of the progress block on screen below the last write
}

// NewConsole returns a Console writing to w (nil: nowhere).
func NewConsole(w io.Writer) *Console {
	if w == nil {
		w = io.Discard
	}
	return &Console{w: w}
}

func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drawn > 0 {
		// Up over the block and clear to the end of the screen.
		if _, err := fmt.Fprintf(c.w, "\x1b[%dA\r\x1b[J", c.drawn); err != nil {
			return 0, err
		}
		c.drawn = 0
	}
	return c.w.Write(p)
}
