package extension

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/models/desktop"
	"github.com/buzzload/buzzload/modules/scenario"
)

// pacer is the driver of models.ConnectPacer, shared by the process's
// clients (population.connect_rate_per_sec, divided among the shards): the
// pacer decides when, this waits.
type pacer struct {
	mu sync.Mutex
	p  models.ConnectPacer
}

func newPacer(perSec float64) *pacer { return &pacer{p: models.NewConnectPacer(perSec)} }

func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	at := p.p.Reserve(time.Now())
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slot is one VU's client in one population: claimed at the VU's first
// iteration in that scenario and kept for the run.
type slot struct {
	kind   scenario.Kind
	global int
	cl     *models.Client
	desk   *desktop.Human
	sink   *opSink
	exited bool
	began  bool
}

// runPopulation runs one session of the client this VU maps to in
// population p. It blocks for the session (one session per iteration). A
// VU of several humans (population.humans_per_vu) runs them all, each
// session after session, in one iteration that lasts until the stop
// (group.go).
func (in *instance) runPopulation(l *loaded, p k6options.Population) error {
	st := in.vu.State()
	if st == nil || st.Phase != jsmodule.PhaseIteration {
		return fmt.Errorf("%s() runs clients only in VU code (an exec function of a scenario)", p.Exec)
	}
	if per := l.base.ClientsPerVU(p.Kind); per > 1 {
		return in.runGroup(l, p, st, per)
	}
	key := slotKey{l, st.Scenario}
	sl := in.slots[key]
	if sl == nil {
		var err error
		sl, err = in.newSlot(l, p, st)
		if sl != nil {
			in.slots[key] = sl
		}
		if err != nil {
			return err
		}
	}
	sl.sink.retag(st.Tags.TagSet())
	in.runSlot(l, p, sl, in.vu.Context())
	return nil
}

// runSlot runs one session of sl's client, or idles until the stop when it
// has none left to run (it exited, or the stop has come): true then.
func (in *instance) runSlot(l *loaded, p k6options.Population, sl *slot, grace context.Context) (done bool) {
	stopAt := sl.sink.start.Add(l.base.Duration())
	if sl.exited {
		// A client that exited does not come back; idle until the stop.
		waitUntil(grace, stopAt)
		return true
	}
	if !time.Now().Before(stopAt) {
		// The runner may start one more iteration in the instant before its
		// own end: start no session after the stop (and do not spin).
		waitUntil(grace, time.Now().Add(10*time.Millisecond))
		return true
	}
	// The stop is a cancellation, not a deadline: an operation cut short by
	// it must read as abandoned (context.Canceled), not as its own timeout.
	stop, cancel := context.WithCancel(grace)
	defer cancel()
	timer := time.AfterFunc(time.Until(stopAt), cancel)
	defer timer.Stop()
	// The abort moment: the first client to see its grace cancelled (not
	// run out) marks it, so the report ends the timeline there.
	unmark := context.AfterFunc(grace, func() {
		if models.Aborted(grace) {
			l.agg.NoteAbort(time.Now())
		}
	})
	defer unmark()
	if !sl.began {
		l.agg.FirstSession(p.Kind, l.stepIndex(time.Since(sl.sink.start)))
	}
	live := l.agg.ClientDelta(p.Kind, 1, !sl.began)
	sl.began = true
	in.pushClients(l, sl, live)
	var end models.End
	if sl.desk != nil {
		end = runDesktop(sl, stop, grace, stopAt)
	} else {
		end = sl.cl.Session(stop, grace)
	}
	sl.sink.flushData()
	live = l.agg.ClientDelta(p.Kind, -1, false)
	in.pushClients(l, sl, live)
	if end.Reason == models.EndInterrupted || models.Aborted(grace) {
		// The run was aborted (an abortOnFail threshold, test.abort(), a
		// signal), before the stop or within the grace: what was in flight
		// was cut at once and recorded as cut by the abort. A consequence
		// of what stopped the run, not a client that failed.
		sl.exited = true
		l.agg.Interrupt(p.Kind)
		return false
	}
	if end.Unexpected() {
		sl.exited = true
		in.recordExit(l, sl, end)
	}
	return false
}

type slotKey struct {
	l        *loaded
	scenario string
}

func (in *instance) pushClients(_ *loaded, sl *slot, live int64) {
	in.vu.Metrics().Push(metrics.Sample{Metric: in.met.clients, Time: time.Now(), Value: float64(live),
		Tags: sl.sink.base().With("kind", sl.kind.String())})
}

// newSlot claims this VU's place in the population and builds its client.
// The k-th VU to start in a population scenario of this instance takes
// local slot k; with an execution segment that is global slot
// GlobalIndex(k) of the segment's stripe; the slot indexes the
// population's clients in ramp order (Scenario.Clients at the peak, in this
// shard).
func (in *instance) newSlot(l *loaded, p k6options.Population, st *jsmodule.State) (*slot, error) {
	start, err := in.startVU(l, st)
	if err != nil {
		return nil, err
	}
	sl := in.emptySlot(l, p, st, start)
	pos, err := in.claimVU(l, st)
	if err == nil {
		var g int
		g, err = in.clientAt(l, p, st, pos)
		if err == nil {
			err = in.buildClient(l, p, st, sl, g)
		}
	}
	if err != nil {
		in.failSlot(sl, err)
		return sl, err
	}
	return sl, nil
}

// startVU notes a population VU's first iteration: the run's timeline
// starts with the first, and every VU's outputs attach.
func (in *instance) startVU(l *loaded, st *jsmodule.State) (time.Time, error) {
	start, err := in.scenarioStart(l, st)
	if err != nil {
		return time.Time{}, err
	}
	l.agg.NoteStart(start)
	in.notePerformer(l)
	l.startWindows(start)
	l.genOut.attach(in.vu.Metrics().Push, in.met, st.Tags.TagSet())
	return start, nil
}

// emptySlot is a client's place before its client is built: its own sink.
func (in *instance) emptySlot(l *loaded, p k6options.Population, st *jsmodule.State, start time.Time) *slot {
	sink := newOpSink(l, int(p.Kind), in.met, in.vu, st.Tags.TagSet(), start)
	sink.periodic = true
	sink.lastData.Store(time.Now().UnixNano())
	return &slot{kind: p.Kind, global: -1, sink: sink}
}

// failSlot marks a client that cannot run: an unexpected exit (it fails
// the run), once; the VU then idles until the stop instead of failing
// every iteration.
func (in *instance) failSlot(sl *slot, err error) {
	sl.exited = true
	in.recordExit(sl.sink.l, sl, models.End{Reason: models.EndExited, Err: err})
}

// claimVU checks the target once per run and claims this VU's place in
// the population: the k-th VU to start in a population scenario of this
// process takes local slot k, global slot GlobalIndex(k) of the execution
// segment's stripe.
func (in *instance) claimVU(l *loaded, st *jsmodule.State) (int64, error) {
	sc, err := l.target()
	if err != nil {
		return 0, err
	}
	if err := l.checkTarget(in.vu.Context(), sc, false, nil, ""); err != nil {
		return 0, err
	}
	return in.m.globalSlot(in, l.claim(st.Scenario))
}

// clientAt is the global client index at position pos of this shard's
// population list (the order the ramp adds them).
func (in *instance) clientAt(l *loaded, p k6options.Population, st *jsmodule.State, pos int64) (int, error) {
	list := l.clientList(p.Kind)
	if pos >= int64(len(list)) {
		return 0, fmt.Errorf("scenario %s: VU slot %d but %s has only %d %s clients in this shard; run it with the options() of its scenario file",
			st.Scenario, pos, l.base.File, len(list), p.Kind)
	}
	return list[pos], nil
}

func (in *instance) buildClient(l *loaded, p k6options.Population, st *jsmodule.State, sl *slot, g int) error {
	sc, err := l.target()
	if err != nil {
		return err
	}
	pool, err := in.m.httpPool()
	if err != nil {
		return err
	}
	sl.global = g
	local := l.localIP(g, st.VUID, in.vu.TestOptions())
	if p.Kind == scenario.KindDesktop {
		sl.desk, err = desktop.NewHuman(desktop.HumanConfig{Scenario: sc, Global: g, Sink: sl.sink, Transport: pool,
			BeforeConnect: l.pacer().wait, PubKey: l.pubKey, LocalAddr: local})
		return err
	}
	sl.cl, err = models.New(models.Config{Scenario: sc, Global: g, Sink: sl.sink, Transport: pool,
		BeforeConnect: l.pacer().wait, PubKey: l.pubKey, Keys: l.keys().Keys, LocalAddr: local})
	return err
}

// recordExit counts a client that exited unexpectedly.
func (in *instance) recordExit(l *loaded, sl *slot, end models.End) {
	text := ""
	if end.Err != nil {
		text = end.Err.Error()
	}
	step := l.stepIndex(time.Since(sl.sink.start))
	l.agg.Exit(sl.kind, step, end.Reason.String(), text)
	in.vu.Metrics().Push(metrics.Sample{Metric: in.met.exits, Time: time.Now(), Value: 1,
		Tags: sl.sink.base().With("kind", sl.kind.String()).With("reason", end.Reason.String()).With("step", l.stepLabel(step))})
}

// runDesktop runs a desktop human for the rest of the run in one iteration
// (its client reconnects by itself). What the grace cuts short is recorded
// as "unfinished at stop" and the client counted as cancelled; what an
// abort cuts short is pending, cut by the abort, and the client
// interrupted; a Run that fails before the stop is an exit.
func runDesktop(sl *slot, stop, grace context.Context, stopAt time.Time) models.End {
	// The desktop human's own session sink marks what the grace or an abort
	// cuts short (models.CutShort, as the basic human's does).
	err := sl.desk.Run(stop, grace)
	switch {
	case models.Aborted(grace):
		return models.End{Reason: models.EndInterrupted, Err: errors.New("the run was aborted")}
	case grace.Err() != nil:
		return models.End{Reason: models.EndCancelled, Err: errors.New("operations still in flight when the shutdown grace ended")}
	case err != nil:
		return models.End{Reason: models.EndExited, Err: err}
	case time.Now().Before(stopAt):
		return models.End{Reason: models.EndExited, Err: errors.New("the desktop client stopped before the end of the run")}
	}
	return models.End{Reason: models.EndStopped}
}

func waitUntil(ctx context.Context, at time.Time) {
	d := time.Until(at)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
