// Spec §1.7/§1.8/§2.1: a scenario's env is merged into __ENV when a VU is
// activated for it (init never sees it); __ITER counts across scenarios;
// vu.metrics.tags set in one scenario are cleared when the VU joins the next;
// scenario tags reach the VU; startTime counts from the END of setup (500 ms).
// exit: 0
// stderr: a iter=0 sc=a mine=undefined t=ta
// stderr: a iter=1 sc=a mine=x t=ta
// stderr: b iter=2 sc=b mine=undefined t=undefined afterSetup=true
// !stderr: init sc=a
// !stderr: init sc=b
// !stderr: afterSetup=false
import exec from "k6/execution";
import { sleep } from "k6";
console.log(`init sc=${__ENV.SC}`);
export const options = {
  scenarios: {
    a: { executor: "per-vu-iterations", vus: 1, iterations: 2, maxDuration: "1s", gracefulStop: "0s", env: { SC: "a" }, tags: { t: "ta" }, exec: "fa" },
    b: { executor: "per-vu-iterations", vus: 1, iterations: 1, startTime: "1s", env: { SC: "b" }, exec: "fb" },
  },
};
export function setup() { sleep(0.5); }
export function fa() {
  console.log(`a iter=${__ITER} sc=${__ENV.SC} mine=${exec.vu.metrics.tags.mine} t=${exec.vu.metrics.tags.t}`);
  exec.vu.metrics.tags.mine = "x";
}
export function fb() {
  // 500 ms setup + 1 s startTime; generous lower bound only.
  const late = exec.instance.currentTestRunDuration >= 1450;
  console.log(`b iter=${__ITER} sc=${__ENV.SC} mine=${exec.vu.metrics.tags.mine} t=${exec.vu.metrics.tags.t} afterSetup=${late}`);
}
