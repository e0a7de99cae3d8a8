// Our extension: run 'a' (stages 0 and 1) averages about 20, above avg<5,
// so window 'a' fails at the end of stage 1 and aborts before 'b'.
// exit: 99
// stderr: stage thresholds crossed with abortOnFail
import exec from "k6/execution";
import { sleep } from "k6";
import { Trend } from "k6/metrics";
const v = new Trend("spiky");
export const options = {
  scenarios: { s: { executor: "ramping-vus", startVUs: 1, gracefulRampDown: "0s",
    stages: [{ duration: "200ms", target: 1, name: "a" }, { duration: "800ms", target: 1, name: "a" },
             { duration: "5s", target: 1, name: "b" }] } },
  thresholds: { spiky: [{ threshold: "avg<5", window: "stage", scenario: "s", abortOnFail: true }] },
};
export default function () {
  v.add(exec.scenario.stage.index === 0 ? 100 : 0);
  sleep(0.02);
}
