package stats

import (
	"math"
	"testing"
)

// Against values computed by hand (and R's t.test): Welch's interval of
// two small samples, a mean's interval, the t quantiles.
func TestIntervals(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.01 }
	if !near(TQuantile(0.975, 120), 1.980) || !near(TQuantile(0.975, 1e6), 1.960) {
		t.Fatalf("t: %v %v", TQuantile(0.975, 120), TQuantile(0.975, 1e6))
	}
	// t.test(c(12,14,13), mu=0): mean 13, 95% CI [10.516, 15.484]
	m := MeanCI([]float64{12, 14, 13})
	if !near(m.Estimate, 13) || !near(m.Lo, 10.516) || !near(m.Hi, 15.484) {
		t.Fatalf("mean %+v", m)
	}
	// t.test(c(20,22,21,23), c(10,12,11,13)) (Welch): difference −10 for a−b; here b − a = 10,
	// df 6, CI ±2.234 (se 0.9129, t 2.447).
	d, ok := DiffCI([]float64{10, 12, 11, 13}, []float64{20, 22, 21, 23}, 0.95)
	if !ok || !near(d.Estimate, 10) || !near(d.Lo, 7.766) || !near(d.Hi, 12.234) || !d.Excludes0() {
		t.Fatalf("diff %+v", d)
	}
	d, _ = DiffCI([]float64{10, 12, 11}, []float64{11, 10, 12}, 0.95)
	if d.Excludes0() {
		t.Fatalf("the same values: %+v", d)
	}
	if _, ok := DiffCI([]float64{1}, []float64{1, 2}, 0.95); ok {
		t.Fatal("an interval from one value")
	}
}

// t975 are Student's t 0.975 quantiles for 1..30 degrees of freedom (any
// t table).
var t975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

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
}
