package extension

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/ledger"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// The run side of the delivery ledger (issue 40): one ledger per loaded
// scenario, told everything by its clients' connections through their
// sinks (opSink.Ledger), judged every ledgerTick, finished at the end of
// the run once the clients have stopped (endOfRun).

// ledgerTick is how often waiting events are judged and the buzz_ledger_*
// counters written.
const ledgerTick = time.Second

// ledgerRun is a loaded scenario's ledger and what it has written.
type ledgerRun struct {
	l       *ledger.Ledger
	journal *os.File // nil: none; closed by finishLedger
	jerr    error
	done    bool         // finishLedger ran
	start   atomic.Int64 // the timeline's start (unix ns), for the step of a moment
	sentMu  sync.Mutex
	sent    [4]int64 // the counts already written as samples (the tick's goroutine and the end)
}

// newLedgerRun is the scenario's ledger, nil when [verify] ledger_sample = 0.
func (l *loaded) newLedgerRun() *ledgerRun {
	v := l.base.Verify
	if v.LedgerSample <= 0 {
		return nil
	}
	lr := &ledgerRun{}
	var journal io.Writer
	if dir := l.m.opts.LedgerJournalDir; dir != "" {
		f, err := os.CreateTemp(dir, ".buzzload-ledger-*")
		if err != nil {
			lr.jerr = fmt.Errorf("the ledger's journal: %w", err)
		} else {
			lr.journal, journal = f, f
		}
	}
	// A pair whose subscription the client closed without it is judged
	// (missed) only when the close came the latency limit after the OK:
	// before that the delivery may have been on its way.
	due := time.Duration(l.base.Abort.MaxP99Ms * float64(time.Millisecond))
	lr.l = ledger.New(ledger.Config{Sample: v.LedgerSample, MaxLost: int64(v.MaxLost), Due: max(due, time.Second), Journal: journal,
		StepAt: func(t time.Time) string {
			start := lr.start.Load()
			if start == 0 {
				return l.stepLabel(0)
			}
			return l.stepLabel(l.stageIndex(t.Sub(time.Unix(0, start))) / 2)
		}})
	return lr
}

// Ledger makes the sink a relayclient.LedgerSource: the connections and
// HTTP clients it is given tell the scenario's ledger what they do.
func (s *opSink) Ledger() relayclient.Ledger {
	if s.l.ledger == nil {
		return nil
	}
	return s.l.ledger.l
}

// runLedger judges the ledger every tick until stop and writes its counts.
func (l *loaded) runLedger(start time.Time, stop <-chan struct{}) {
	lr := l.ledger
	if lr == nil {
		return
	}
	lr.start.Store(start.UnixNano())
	lr.l.MarkStart(start)
	t := time.NewTicker(ledgerTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			lr.l.Tick(now)
			l.pushLedger(now)
		}
	}
}

// finishLedger judges everything left (the clients have stopped) and
// writes the last counts.
func (l *loaded) finishLedger() {
	if l.ledger == nil {
		return
	}
	now := time.Now()
	lr := l.ledger
	lr.l.Finish(now)
	l.pushLedger(now)
	if lr.journal != nil {
		lr.jerr = errors.Join(lr.l.JournalError(), lr.journal.Close())
	}
	lr.done = true
}

// TakeLedgerJournal is the path of the first loaded scenario's ledger
// journal (Options.LedgerJournalDir), once the run has ended; the caller
// moves or removes it. "" when there is none; err when it is incomplete.
func (m *Module) TakeLedgerJournal() (path string, err error) {
	for _, l := range m.loadedScenarios() {
		lr := l.ledger
		if lr == nil || lr.journal == nil {
			continue
		}
		path, err = lr.journal.Name(), lr.jerr
		if !lr.done { // no client ran: nothing to join
			_ = lr.journal.Close()
			err = nil
		}
		lr.journal = nil
		if err != nil || !lr.done {
			_ = os.Remove(path)
			return "", err
		}
		return path, nil
	}
	return "", nil
}

// pushLedger writes the growth of the ledger's counts as buzz_ledger_*
// samples (Prometheus and the other outputs show reach live).
func (l *loaded) pushLedger(at time.Time) {
	push, met, tags := l.genOut.get()
	if push == nil {
		return
	}
	lr := l.ledger
	lr.sentMu.Lock()
	defer lr.sentMu.Unlock()
	e, r, m, lost := lr.l.Counts()
	now := [4]int64{e, r, m, lost}
	ms := [4]*metrics.Metric{met.ledgerExpected, met.ledgerReceived, met.ledgerMissed, met.ledgerLost}
	var out []metrics.Sample
	for i := range now {
		if d := now[i] - lr.sent[i]; d > 0 {
			out = append(out, metrics.Sample{Metric: ms[i], Tags: tags, Time: at, Value: float64(d)})
			lr.sent[i] = now[i]
		}
	}
	if len(out) > 0 {
		push(out...)
	}
}
