package models

import (
	"reflect"
	"testing"
	"time"
)

func TestConnectPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		perSec float64
		asks   []time.Duration // when each attempt asks, since t0
		want   []time.Duration // when each may start
	}{
		{"attempts asked at once are spaced one interval apart",
			10, []time.Duration{0, 0, 0}, []time.Duration{0, 100 * ms, 200 * ms}},
		{"an attempt asked after its slot starts at once",
			10, []time.Duration{0, 150 * ms}, []time.Duration{0, 150 * ms}},
		{"an idle pacer banks no slots: a burst after a quiet spell is spaced from now",
			10, []time.Duration{0, time.Second, time.Second, time.Second}, []time.Duration{0, time.Second, 1100 * ms, 1200 * ms}},
		{"a rate of 0 never waits",
			0, []time.Duration{0, 0, 0}, []time.Duration{0, 0, 0}},
		{"a fractional rate gives intervals longer than a second",
			0.5, []time.Duration{0, 0}, []time.Duration{0, 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewConnectPacer(tc.perSec)
			var got []time.Duration
			for _, a := range tc.asks {
				got = append(got, p.Reserve(t0.Add(a)).Sub(t0))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("starts %v, want %v", got, tc.want)
			}
		})
	}
}
