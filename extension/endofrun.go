package extension

import (
	"context"
	"time"

	"github.com/buzzload/buzzload/modules/audit"
)

// The end of a run (issue 26): the verdict's second and third sides, what
// the relay says about itself and whether what it acknowledged is there.

// endOfRun gathers the relay's own evidence once, while the relay (the
// embedded one included) still runs: the relay logs' scans, then for every
// loaded scenario whose clients ran the post-run sweep (sweep.go) and the
// durability audit (durability.go). Close calls it, which the scripts'
// teardown and report helpers and the runner's end all do.
func (m *Module) endOfRun() {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return
	}
	ls := m.loadedScenarios()
	m.logsOnce.Do(func() {
		m.finishRelayMetrics(ls)
		for _, f := range m.logFiles {
			m.relayLogs = append(m.relayLogs, f.Scan(m.opts.RelayLogRules))
		}
		for _, k := range m.kubeLogs {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			m.relayLogs = append(m.relayLogs, k.Scan(ctx, m.opts.RelayLogRules))
			cancel()
		}
		m.ownLogMu.Lock()
		if m.ownLog != nil {
			m.relayLogs = append(m.relayLogs, m.ownLog.Result())
		}
		m.ownLogMu.Unlock()
	})
	for _, l := range ls {
		l.auditOnce.Do(func() {
			if !l.win.Started() {
				return // no client started (a failed setup, a script that never used the scenario)
			}
			l.stopDrills()
			l.finishLedger()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			l.visRep = l.vis.Finish(ctx)
			c := l.auditConfig()
			if l.base.Verify.Sweep {
				l.swept = audit.Sweep(ctx, c)
			}
			if l.acks != nil {
				l.durability = audit.Durability(ctx, c, l.acks)
				l.unackedRep = audit.Unacked(ctx, c, l.unacked)
			}
		})
	}
}

// auditConfig is what the read-backs need: the run's target, keys and
// HTTP pool (Err: the first that could not be had).
func (l *loaded) auditConfig() audit.Config {
	c := audit.Config{Shard: l.shard, Keys: l.keys()}
	c.Scenario, c.Err = l.target()
	if c.Err == nil {
		c.Transport, c.Err = l.m.httpPool()
	}
	return c
}
