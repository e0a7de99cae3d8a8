package jshost

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// sleep reuses one timer per VU: a sleep cut short by the context must not
// leave a stale expiry that ends the next sleep early, and its argument
// converts as k6's sleep(float) did through reflection.
func TestSleepTimerReuseAndArguments(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { sleep } from "k6";
export default function () {
  if (__ITER === 0) { sleep(0.2); return; }
  const t0 = Date.now();
  sleep(undefined); sleep(null); sleep(-1); sleep(NaN); sleep("x"); sleep(0);
  globalThis.instant = Date.now() - t0;
  const t1 = Date.now();
  sleep("0.05");
  sleep(0.05);
  globalThis.slept = Date.now() - t1;
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if res := vu.RunIteration(ctx, Iteration{Stage: -1}); res.Full {
		t.Fatalf("the first sleep must end with the context: %+v", res)
	}
	// Past the first sleep's own expiry: a stale tick would be waiting now.
	time.Sleep(250 * time.Millisecond) // time passing is the test: past the first sleep's own expiry
	if res := vu.RunIteration(context.Background(), Iteration{Stage: -1}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := vu.rt.Get("instant").ToInteger(); got > 1000 {
		t.Errorf("sleep of undefined/null/negative/NaN/non-number took %d ms, want at once", got)
	}
	if got := vu.rt.Get("slept").ToInteger(); got < 100 {
		t.Errorf(`sleep("0.05") + sleep(0.05) took %d ms, want ≥ 100`, got)
	}
}

// The check tag sets are cached per name while the VU's tags stay the same;
// a change of the tags, extra tags and more names than the cache holds
// still tag every sample as before.
func TestCheckTagsFollowTagChanges(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
import { check } from "k6";
import exec from "k6/execution";
export default function () {
  exec.vu.metrics.tags.it = String(__ITER);
  check(1, { a: true });
  check(1, { a: true }, { x: "y" });
  const many = {};
  for (let i = 0; i < 20; i++) many["n" + i] = true;
  check(1, many);
}`})
	b := h.bundle(t, "main.js")
	vu := h.vu(t, b, 1)
	vu.Activate(&Scenario{Name: "sc"}, "default", nil, nil)
	for range 2 {
		if res := vu.RunIteration(context.Background(), Iteration{Stage: -1}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	count := map[string]int{}
	for _, s := range h.metrics.of("checks") {
		count[tagString(s.Tags)]++
	}
	var want []string
	for it := range 2 {
		want = append(want, fmt.Sprintf("check=a,group=,it=%d,scenario=sc", it), fmt.Sprintf("check=a,group=,it=%d,scenario=sc,x=y", it))
		for i := range 20 {
			want = append(want, fmt.Sprintf("check=n%d,group=,it=%d,scenario=sc", i, it))
		}
	}
	var got []string
	for k, n := range count {
		if n != 1 {
			t.Errorf("%d samples tagged %s, want 1", n, k)
		}
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
