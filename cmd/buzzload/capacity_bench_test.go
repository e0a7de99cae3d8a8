package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkCapacitySyntheticKnee is the capacity search end to end (issue
// 44) against buzzload's relay with a synthetic knee: deliveries leave
// 400 ms late once more than 40 sockets are open. It reports the people
// found (knee_people: 40 within the resolution), the interval's width,
// the probes and the search's seconds, in one process and in three
// shards; it fails when the knee is missed or a probe was invalid.
// `make bench-capacity` runs it (3 times each, about 10 minutes).
func BenchmarkCapacitySyntheticKnee(b *testing.B) {
	if os.Getenv("BUZZLOAD_BENCH_CAPACITY") == "" {
		b.Skip("minutes per search: `make bench-capacity` (BUZZLOAD_BENCH_CAPACITY=1)")
	}
	for _, shards := range []int{1, 3} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			for range b.N {
				r := seedRelay(b)
				r.Faults().SlowDeliveriesAbove(40, 400*time.Millisecond)
				path := kneeScenario(b, r.Addr(), 3)
				raw, _ := os.ReadFile(path)
				toml := strings.NewReplacer("start_users = 4", "start_users = 10", "resolution = 0.1", "resolution = 0.05", "max_users = 64", "max_users = 200").Replace(string(raw))
				if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
					b.Fatal(err)
				}
				dir := filepath.Dir(path)
				start := time.Now()
				code, out, errs := runBin(b, dir, []string{"TEST_OP_KEY=" + r.OperatorKeys().SecretHex()}, "capacity", "--shards", fmt.Sprint(shards), "--report", filepath.Join(dir, "cap.json"), path)
				secs := time.Since(start).Seconds()
				var rep capacityReport
				if raw, err := os.ReadFile(filepath.Join(dir, "cap.json")); err != nil || json.Unmarshal(raw, &rep) != nil || code != 0 {
					b.Fatalf("exit %d\n%s\n%s", code, out, errs)
				}
				a := rep.Capacity
				if a.Users > 40 || a.Users < 38 {
					b.Fatalf("found %d people, want 40 within the resolution\n%s", a.Users, out)
				}
				for _, p := range a.Probes {
					if !p.Valid {
						b.Fatalf("an invalid probe: %+v", p)
					}
				}
				b.ReportMetric(float64(a.Users), "knee_people")
				b.ReportMetric(float64(a.CI95[1]-a.CI95[0]), "ci_width")
				b.ReportMetric(float64(len(a.Probes)), "probes")
				b.ReportMetric(secs, "search_secs")
			}
		})
	}
}
