package desktop

import (
	"testing"
	"time"
)

// The model's cost per client: a cold start (plan, 7 REQs, 15 reads) and a
// quiet current-mode tick.
func BenchmarkModelColdStart25Channels(b *testing.B) {
	p := params(ModeCurrent, 25)
	b.ReportAllocs()
	for b.Loop() {
		m, _ := NewModel(p)
		m.Step(Start{At: t0})
		acts := m.Step(Connected{At: t0, Epoch: 1})
		for len(acts) > 0 {
			var next []Action
			for _, a := range acts {
				switch a := a.(type) {
				case OpenSub:
					next = append(next, m.Step(EOSE{Sub: a.Spec.ID, At: t0})...)
				case StartRead:
					next = append(next, m.Step(ReadSettled{Read: a.Read.Key, At: t0, OK: true, SnapshotOK: true})...)
				}
			}
			acts = next
		}
	}
}

func BenchmarkModelQuietTick(b *testing.B) {
	m, _ := NewModel(params(ModeCurrent, 25))
	m.Step(Start{At: t0})
	m.Step(Connected{At: t0, Epoch: 1})
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Minute)
		m.Step(Wake{At: at, LastFrame: at})
		m.lastReplaced, m.lastRoster, m.lastFullRepair = at, at, at // stay under the backstop
	}
}
