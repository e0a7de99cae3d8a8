package report

import "testing"

// The generator is marked saturated only when this process is the cause
// (issue 29 item 5): its CPU high, or a lag while the machine was not busy
// or this process was; a lag while the machine was busy and this process
// was not is said apart.
func TestGeneratorSaturationNamesItsCause(t *testing.T) {
	for _, c := range []struct {
		name                 string
		cpu, machine, lag    float64
		saturated, elsewhere bool
	}{
		{"quiet", 10, 20, 5, false, false},
		{"own CPU", 95, 96, 5, true, false},
		{"lag, machine idle", 20, 30, 500, true, false},
		{"lag, machine busy, process busy", 70, 99, 500, true, false},
		{"lag, machine busy, process idle", 10, 99, 500, false, true},
		{"lag, machine busy, process at half its core", 48, 99, 500, true, false},
		{"lag, machine unknown", 10, 0, 500, true, false},
	} {
		g := &GeneratorReport{CPUPct: c.cpu, MachinePct: c.machine, LagP99Ms: c.lag, LagSamples: 100, Cores: 2}
		judgeGenerator(g, 100)
		if g.Saturated != c.saturated || (g.Elsewhere != "") != c.elsewhere {
			t.Errorf("%s: saturated %v (%s), elsewhere %q", c.name, g.Saturated, g.Reason, g.Elsewhere)
		}
	}
}
