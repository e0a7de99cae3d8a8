package thresholds

import (
	"encoding/json"
	"errors"
	"testing"
)

// options.thresholds comes from the script: whatever it holds is accepted
// or refused with an *Error naming the metric, never a panic.
func FuzzThresholdDefinitions(f *testing.F) {
	f.Add(`{"my_trend":["p(95)<200",{"threshold":"avg<100","abortOnFail":true,"delayAbortEval":"10s"}]}`)
	f.Add(`{"my_trend{a:b}":[{"threshold":"max<5","delayAbortEval":1500,"window":"stage","scenario":"s"}]}`)
	f.Add(`{"my_trend":[{"threshold":"avg<1","delayAbortEval":"1e300"}]}`)
	f.Add(`{"{":["p(1e400)<=-0"]}`)
	f.Fuzz(func(t *testing.T, js string) {
		var cfg Config
		if json.Unmarshal([]byte(js), &cfg) != nil {
			return
		}
		set, err := New(cfg, newReg(t))
		var te *Error
		if err != nil && !errors.As(err, &te) {
			t.Fatalf("error %v is not a *thresholds.Error", err)
		}
		if err == nil {
			for _, th := range set.Thresholds {
				if th.DelayAbortEval < 0 {
					t.Fatalf("%s: negative delayAbortEval %v", th.Key, th.DelayAbortEval)
				}
			}
		}
	})
}
