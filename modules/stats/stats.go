// Package stats has the few statistics buzzload's judgements need: a
// mean's and a difference of means' confidence intervals (Student's t,
// Welch's for two samples of unequal variance), as Buzz's own
// ingest-ceiling harness judges two builds by the interval of their
// difference (../shared/docs/audits/anchors.md §1.2).
package stats

import "math"

// Mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Var is the sample variance of xs (n − 1; 0 below two).
func Var(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(xs)-1)
}

// Interval is an estimate with its confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
}

// Excludes0 reports whether the interval excludes zero.
func (i Interval) Excludes0() bool { return i.Lo > 0 || i.Hi < 0 }

// MeanCI is the mean of xs with its 95 % interval (the mean alone, as
// both ends, below two values).
func MeanCI(xs []float64) Interval {
	m := Mean(xs)
	if len(xs) < 2 {
		return Interval{m, m, m}
	}
	h := TQuantile(0.975, float64(len(xs)-1)) * math.Sqrt(Var(xs)/float64(len(xs)))
	return Interval{m, m - h, m + h}
}

// DiffCI is mean(b) − mean(a) with Welch's interval at confidence conf
// (0.95; or 1 − 0.05/k for k simultaneous comparisons: Bonferroni); ok is
// false when either side has fewer than two values (no interval can be
// had).
func DiffCI(a, b []float64, conf float64) (Interval, bool) {
	d := Mean(b) - Mean(a)
	if len(a) < 2 || len(b) < 2 {
		return Interval{d, d, d}, false
	}
	va, vb := Var(a)/float64(len(a)), Var(b)/float64(len(b))
	se := math.Sqrt(va + vb)
	if se == 0 {
		return Interval{d, d, d}, true
	}
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	h := TQuantile(1-(1-conf)/2, df) * se
	return Interval{d, d - h, d + h}, true
}

// TQuantile is Student's t quantile p (0.5 < p < 1) for df degrees of
// freedom: the root of the t distribution's CDF, found by bisection over
// the regularized incomplete beta function (Numerical Recipes §6.4's
// continued fraction).
func TQuantile(p, df float64) float64 {
	if p <= 0.5 {
		return 0
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p && hi < 1e7 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is P(T ≤ t) for t ≥ 0.
func tCDF(t, df float64) float64 {
	return 1 - 0.5*betaInc(df/2, 0.5, df/(df+t*t))
}

// betaInc is the regularized incomplete beta function I_x(a, b).
func betaInc(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF is the incomplete beta function's continued fraction (modified
// Lentz's method).
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 3e-14 {
			break
		}
	}
	return h
}
