package extension

import (
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
	l     *ledger.Ledger
	start atomic.Int64 // the timeline's start (unix ns), for the step of a moment
	sent  [4]int64     // the counts already written as samples (the tick's goroutine, then the end)
}

// newLedgerRun is the scenario's ledger, nil when [verify] ledger_sample = 0.
func (l *loaded) newLedgerRun() *ledgerRun {
	v := l.base.Verify
	if v.LedgerSample <= 0 {
		return nil
	}
	lr := &ledgerRun{}
	// A pair whose subscription the client closed without it is judged
	// (missed) only when the close came the latency limit after the OK:
	// before that the delivery may have been on its way.
	due := time.Duration(l.base.Abort.MaxP99Ms * float64(time.Millisecond))
	lr.l = ledger.New(ledger.Config{Sample: v.LedgerSample, MaxLost: int64(v.MaxLost), Due: max(due, time.Second),
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
	l.ledger.l.Finish(now)
	l.pushLedger(now)
}

// pushLedger writes the growth of the ledger's counts as buzz_ledger_*
// samples (Prometheus and the other outputs show reach live).
func (l *loaded) pushLedger(at time.Time) {
	push, met, tags := l.genOut.get()
	if push == nil {
		return
	}
	lr := l.ledger
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
