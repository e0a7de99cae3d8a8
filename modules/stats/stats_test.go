package stats

import (
	"math"
	"testing"
)

// Against values computed by hand (and R's t.test): Welch's interval of
// two small samples, a mean's interval, the t quantiles.
func TestIntervals(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.01 }
	if !near(T975(1), 12.706) || !near(T975(10), 2.228) || !near(T975(2.5), (4.303+3.182)/2) || !near(T975(120), 1.980) || !near(T975(1e6), 1.960) {
		t.Fatalf("t: %v %v %v %v", T975(1), T975(10), T975(120), T975(1e6))
	}
	// t.test(c(12,14,13), mu=0): mean 13, 95% CI [10.516, 15.484]
	m := MeanCI([]float64{12, 14, 13})
	if !near(m.Estimate, 13) || !near(m.Lo, 10.516) || !near(m.Hi, 15.484) {
		t.Fatalf("mean %+v", m)
	}
	// t.test(c(20,22,21,23), c(10,12,11,13)) (Welch): difference −10 for a−b; here b − a = 10,
	// df 6, CI ±2.234 (se 0.9129, t 2.447).
	d, ok := DiffCI([]float64{10, 12, 11, 13}, []float64{20, 22, 21, 23})
	if !ok || !near(d.Estimate, 10) || !near(d.Lo, 7.766) || !near(d.Hi, 12.234) || !d.Excludes0() {
		t.Fatalf("diff %+v", d)
	}
	d, _ = DiffCI([]float64{10, 12, 11}, []float64{11, 10, 12})
	if d.Excludes0() {
		t.Fatalf("the same values: %+v", d)
	}
	if _, ok := DiffCI([]float64{1}, []float64{1, 2}); ok {
		t.Fatal("an interval from one value")
	}
}

// The quantile by bisection agrees with the table, and with the one-tail
// 0.001 and 0.0005 points for 4 degrees of freedom (7.173, 8.610: any t
// table).
func TestTQuantile(t *testing.T) {
	for df := 1; df <= 30; df++ {
		if got := TQuantile(0.975, float64(df)); math.Abs(got-t975[df-1]) > 0.002 {
			t.Errorf("df %d: %v, want %v", df, got, t975[df-1])
		}
	}
	if got := TQuantile(0.999, 4); math.Abs(got-7.173) > 0.002 {
		t.Errorf("qt(0.999, 4) = %v, want 7.173", got)
	}
	if got := TQuantile(0.9995, 4); math.Abs(got-8.610) > 0.002 {
		t.Errorf("qt(0.9995, 4) = %v, want 8.610", got)
	}
	d95, _ := DiffCI([]float64{10, 12, 11, 13}, []float64{20, 22, 21, 23})
	dAt, _ := DiffCIAt([]float64{10, 12, 11, 13}, []float64{20, 22, 21, 23}, 0.95)
	if math.Abs(d95.Lo-dAt.Lo) > 0.005 {
		t.Errorf("DiffCIAt(0.95) %v vs DiffCI %v", dAt, d95)
	}
}
