package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/segment"
)

// Bad options never panic: they parse into valid configs or give errors.
func FuzzParseScenarios(f *testing.F) {
	for _, seed := range []string{
		`{"s":{"executor":"constant-vus","duration":"1s"}}`,
		`{"s":{"executor":"ramping-vus","stages":[{"duration":"1s","target":3}]}}`,
		`{"s":{"executor":"constant-arrival-rate","rate":1,"duration":1000,"preAllocatedVUs":1,"timeUnit":"1ns"}}`,
		`{"s":{"executor":"ramping-arrival-rate","stages":[{"duration":"1d","target":1e9}],"preAllocatedVUs":1}}`,
		`{"s":{"executor":"shared-iterations","vus":1e300}}`,
		`{"s":{"executor":"per-vu-iterations","env":{"a":[1]},"tags":null}}`,
		`{"a b":{}}`, `[]`, `{"s":null}`, `{"s":{"executor":7}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cs, _, err := ParseScenarios(json.RawMessage(in))
		if err != nil {
			return
		}
		for _, c := range cs {
			if err := c.Validate(); err != nil {
				t.Fatalf("parsed config fails validation: %v", err)
			}
			// Plans of sane size only: 100M VU staircases are valid but big.
			switch cc := c.(type) {
			case *ConstantArrivalRateConfig:
				sc := cc.Schedule()
				if n := sc.Events(); n > 0 {
					_ = sc.Offset(n - 1)
				}
			case *RampingArrivalRateConfig:
				sc := cc.Schedule()
				if n := sc.Events(); n > 0 && n < 1<<40 {
					_ = sc.Offset(n - 1)
				}
			case *RampingVUsConfig:
				continue
			}
			_ = c.ExecutionSteps(segment.FullTuple())
		}
	})
}

func FuzzParseExecutionOptions(f *testing.F) {
	for _, seed := range []string{`{"vus":2,"iterations":4}`, `{"duration":"-1s"}`, `{"stages":[{"target":1}]}`, `{"stages":{}}`, `{"vus":"x"}`, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ParseExecutionOptions(json.RawMessage(in))
		if err != nil {
			return
		}
		_, _, _ = o.DeriveScenarios()
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, seed := range []string{"1m30s", "1d2h", "1500", "-1", "\t-1", "1e400", "99999999999d", "106751d23h59m59s"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ParseDuration(in)
		if err != nil || d >= 0 {
			return
		}
		// Only an explicit minus gives a negative duration; the parser trims
		// surrounding whitespace, so "\t-1" is -1 ms. A negative result from
		// input without a minus is a wrapped overflow.
		if !strings.Contains(strings.TrimSpace(in), "-") {
			t.Fatalf("%q parsed to %v: no minus in the input, so the value wrapped", in, d)
		}
	})
}
