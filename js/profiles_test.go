package js_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/js"
)

// The profiles as the gateway seed writes them: closed-loop stages, VUs and
// durations, the paced twins' rates, the +50 % paced p95 budget and the
// red-signal dropped_iterations thresholds per profile.
func TestProfilesAsWritten(t *testing.T) {
	got := runHelper(t, `import { profile } from "buzzload/profiles.js";
const o = (n) => { const p = profile(n, { warmup: 0 }); return { s: p.scenario, t: p.thresholds, n: p.scheduled, d: p.seconds }; };
export const options = { p1: o("p1-baseline"), p2: o("p2-sustained"), p3: o("p3-ramp"), p4: o("p4-stress"),
  p1c: o("p1c-paced"), p2c: o("p2c-paced"), p3c: o("p3c-paced"), p4c: o("p4c-paced") };`)
	want := `{"p1":{"d":60,"n":0,"s":{"duration":"60s","exec":"default","executor":"constant-vus","vus":10},` +
		`"t":{"http_req_duration":["p(95)<200"],"http_req_failed":["rate<0.01"]}},` +
		`"p1c":{"d":60,"n":30000,"s":{"duration":"60s","exec":"default","executor":"constant-arrival-rate","maxVUs":500,"preAllocatedVUs":50,"rate":500,"timeUnit":"1s"},` +
		`"t":{"dropped_iterations{scenario:p1c-paced}":["count==0"],"http_req_duration":["p(95)<300"],"http_req_failed":["rate<0.01"],"iterations{scenario:p1c-paced}":["count>=0"]}},` +
		`"p2":{"d":300,"n":0,"s":{"duration":"300s","exec":"default","executor":"constant-vus","vus":100},` +
		`"t":{"http_req_duration":["p(95)<300"],"http_req_failed":["rate<0.01"]}},` +
		`"p2c":{"d":300,"n":600000,"s":{"duration":"300s","exec":"default","executor":"constant-arrival-rate","maxVUs":2000,"preAllocatedVUs":200,"rate":2000,"timeUnit":"1s"},` +
		`"t":{"dropped_iterations{scenario:p2c-paced}":["count<=6000"],"http_req_duration":["p(95)<450"],"http_req_failed":["rate<0.01"],"iterations{scenario:p2c-paced}":["count>=0"]}},` +
		`"p3":{"d":420,"n":0,"s":{"exec":"default","executor":"ramping-vus","stages":[{"duration":"60s","target":100},{"duration":"60s","target":300},{"duration":"60s","target":500},{"duration":"180s","target":500},{"duration":"60s","target":0}],"startVUs":10},` +
		`"t":{"http_req_duration":["p(95)<500"],"http_req_failed":["rate<0.01"]}},` +
		`"p3c":{"d":420,"n":2835000,"s":{"exec":"default","executor":"ramping-arrival-rate","maxVUs":5000,"preAllocatedVUs":500,"stages":[{"duration":"60s","target":2000},{"duration":"60s","target":5000},{"duration":"60s","target":10000},{"duration":"180s","target":10000},{"duration":"60s","target":0}],"startRate":500,"timeUnit":"1s"},` +
		`"t":{"dropped_iterations{scenario:p3c-paced}":["count<=28350"],"http_req_duration":["p(95)<750"],"http_req_failed":["rate<0.01"],"iterations{scenario:p3c-paced}":["count>=0"]}},` +
		`"p4":{"d":120,"n":0,"s":{"duration":"120s","exec":"default","executor":"constant-vus","vus":1000},"t":{}},` +
		`"p4c":{"d":120,"n":2400000,"s":{"duration":"120s","exec":"default","executor":"constant-arrival-rate","maxVUs":5000,"preAllocatedVUs":1000,"rate":20000,"timeUnit":"1s"},` +
		`"t":{"iterations{scenario:p4c-paced}":["count>=0"]}}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// scale shortens every duration (at least 1 s), load scales VUs and rates;
// the thresholds judge the metrics named.
func TestProfileScaleLoadAndMetric(t *testing.T) {
	got := runHelper(t, `import { profile } from "buzzload/profiles.js";
const p = profile("p3c-paced", { exec: "read", scale: 0.05, load: 0.01, duration: "buzz_op_duration{op:query}", failed: "buzz_op_failed{op:query}" });
export const options = { s: p.scenario, t: p.thresholds, n: p.scheduled, d: p.seconds, w: p.warmup };`)
	want := `{"d":21,"n":1418,"s":{"exec":"read","executor":"ramping-arrival-rate","maxVUs":50,"preAllocatedVUs":5,` +
		`"stages":[{"duration":"3s","target":20},{"duration":"3s","target":50},{"duration":"3s","target":100},{"duration":"9s","target":100},{"duration":"3s","target":0}],"startRate":5,"timeUnit":"1s"},` +
		`"t":{"buzz_op_duration{op:query,phase:judged}":["p(95)<750"],"buzz_op_failed{op:query,phase:judged}":["rate<0.01"],"dropped_iterations{scenario:p3c-paced}":["count<=14"],` +
		`"iterations{phase:judged}":["count>0"],"iterations{scenario:p3c-paced}":["count>=0"]},"w":1}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// The seed's warm-up: the first 10 s (scaled) are left out of the judged
// latency and failure thresholds, which read {phase:judged}; a run that
// judged nothing fails; warmup 0 judges everything and tags nothing.
func TestProfileWarmup(t *testing.T) {
	got := runHelper(t, `import { profile } from "buzzload/profiles.js";
const a = profile("p2-sustained");
const b = profile("p2-sustained", { warmup: 30, scale: 0.5 });
const c = profile("p2-sustained", { warmup: 0 });
const f = () => 1;
export const options = { a: [a.warmup, a.thresholds], b: b.warmup, c: [c.warmup, c.thresholds, c.judged(f) === f],
  wrapped: a.judged(f) !== f };`)
	want := `{"a":[10,{"http_req_duration{phase:judged}":["p(95)<300"],"http_req_failed{phase:judged}":["rate<0.01"],"iterations{phase:judged}":["count>0"]}],` +
		`"b":15,"c":[0,{"http_req_duration":["p(95)<300"],"http_req_failed":["rate<0.01"]},true],"wrapped":true}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// The verdict of a paced run: valid at 99 % of the scheduled arrivals, not
// below; closed-loop profiles make no claim.
func TestPacedVerdict(t *testing.T) {
	got := runHelper(t, `import { profile, pacedVerdict } from "buzzload/profiles.js";
const p = profile("p1c-paced", { scale: 0.1 }); // 500/s for 6 s: 3000 arrivals
const d = (n) => ({ metrics: { "iterations{scenario:p1c-paced}": { values: { count: n } } } });
export const options = { ok: pacedVerdict(d(2970), p), short: pacedVerdict(d(2969), p),
  closed: pacedVerdict(d(0), profile("p1-baseline")).valid };`)
	want := `{"closed":null,"ok":{"achieved":2970,"flagged":false,"name":"p1c-paced","paced":true,"scheduled":3000,"text":"  profile p1c-paced: achieved 2970 of 3000 scheduled arrivals (99.00 %): valid as an absolute-rate claim\n","valid":true},` +
		`"short":{"achieved":2969,"flagged":false,"name":"p1c-paced","paced":true,"scheduled":3000,"text":"  profile p1c-paced: achieved 2969 of 3000 scheduled arrivals (98.97 %): NOT valid as an absolute-rate claim (below 99 % of the scheduled arrivals)\n","valid":false}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestProfileRejectsBadInput(t *testing.T) {
	for _, src := range []string{
		`import { profile } from "buzzload/profiles.js"; profile("p5-nope");`,
		`import { profile } from "buzzload/profiles.js"; profile("p1-baseline", { scale: 0 });`,
		`import { profile } from "buzzload/profiles.js"; profile("p1-baseline", { warmup: -1 });`,
		`import { profile } from "buzzload/profiles.js"; profile("p1-baseline", { warmup: "10s" });`,
		`import { profile } from "buzzload/profiles.js"; profile("p1-baseline").judged("op");`,
	} {
		p := filepath.Join(t.TempDir(), "main.js")
		if err := os.WriteFile(p, []byte(src+"\nexport default function () {}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := jshost.NewBundle(context.Background(), jshost.Config{Filename: p, Helpers: js.FS}); err == nil {
			t.Errorf("%s: accepted", src)
		}
	}
}

// The red signal as the profiles mean it (issue 26 item 6): drops as a
// share of the scheduled arrivals. A full p2c fails only past 1 % of its
// arrivals (k6's rate on the dropped_iterations Counter is per second,
// which failed it on its third drop), and p4c flags a shortfall over 5 %.
func TestPacedRedSignalIsAShareOfTheScheduledArrivals(t *testing.T) {
	got := runHelper(t, `import { profile, pacedVerdict } from "buzzload/profiles.js";
const p4 = profile("p4c-paced", { scale: 0.01 }); // 20000/s for 1 s
const d = (n) => ({ metrics: { "iterations{scenario:p4c-paced}": { values: { count: n } } } });
export const options = { t: profile("p2c-paced").thresholds["dropped_iterations{scenario:p2c-paced}"],
  n: p4.scheduled, over: pacedVerdict(d(Math.floor(p4.scheduled * 0.94)), p4).flagged,
  under: pacedVerdict(d(Math.ceil(p4.scheduled * 0.96)), p4).flagged };`)
	want := `{"n":20000,"over":true,"t":["count<=6000"],"under":false}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
