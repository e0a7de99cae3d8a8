package cloud

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Samples land in the period of their own time; a period is handed out
// once the wait period has passed (k6's collector), late samples included.
func TestPeriodsBySampleTimeAndWait(t *testing.T) {
	a := newAggregator(3*time.Second, 2*time.Second)
	reg := metrics.NewRegistry()
	m, err := reg.New("cc", metrics.Counter, metrics.Default)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0) // a multiple of 3 s
	add := func(at time.Time, v float64) { a.add([]metrics.Sample{{Metric: m, Time: at, Value: v}}) }
	add(t0, 1)
	add(t0.Add(2900*time.Millisecond), 2)
	add(t0.Add(3*time.Second), 4)
	if got := a.expired(t0.Add(4*time.Second), false); len(got) != 0 {
		t.Fatalf("expired %d periods before the wait passed", len(got))
	}
	add(t0.Add(time.Second), 8) // late, same period
	got := a.expired(t0.Add(5*time.Second), false)
	if len(got) != 1 || got[0].start != t0.UnixNano() {
		t.Fatalf("periods %v", got)
	}
	for _, v := range got[0].values {
		if v.sum != 11 {
			t.Fatalf("first period sum %v, want 11", v.sum)
		}
	}
	rest := a.expired(t0, true)
	if len(rest) != 1 || rest[0].start != t0.Add(3*time.Second).UnixNano() {
		t.Fatalf("all: %v", rest)
	}
}

// The bucket index of values k6 v1.8.1 was seen to send (the probe in
// cmd/buzzload/testdata/cloud covers 12 decades end to end).
func TestBucketIndex(t *testing.T) {
	for v, want := range map[float64]uint32{0: 0, 0.5: 378, 1.5: 571, 255.9: 1529, 300: 1554, 1e6: 3054, 0.255: 255, 0.256: 256, 0.0001: 1} {
		if got := bucketIndex(v / minResolution); got != want {
			t.Errorf("%v ms: bucket %d, want %d", v, got, want)
		}
	}
}
