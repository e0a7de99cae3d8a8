package extension

import (
	"context"
	"time"
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
			if !l.win.started() {
				return // no client started (a failed setup, a script that never used the scenario)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if l.base.Verify.Sweep {
				l.swept = l.sweep(ctx)
			}
			if l.acks != nil {
				l.durability = l.auditDurability(ctx)
				l.unackedRep = l.auditUnacked(ctx)
			}
		})
	}
}
