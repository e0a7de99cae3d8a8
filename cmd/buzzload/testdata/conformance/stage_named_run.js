// Our extension: consecutive stages with the same name are one threshold
// window. Stage 0 records 100 and is a fifth of run 'a': alone it would
// fail avg<60 (see stage_named_run_fail.js for a limit the run crosses).
// args: --result {tmp}/r.json
// exit: 0
// file-contains: {tmp}/r.json = "stage_name": "b"
// !stderr: thresholds
import exec from "k6/execution";
import { sleep } from "k6";
import { Trend } from "k6/metrics";
const v = new Trend("spiky");
export const options = {
  scenarios: { s: { executor: "ramping-vus", startVUs: 1, gracefulRampDown: "0s",
    stages: [{ duration: "200ms", target: 1, name: "a" }, { duration: "800ms", target: 1, name: "a" },
             { duration: "200ms", target: 1, name: "b" }] } },
  thresholds: { spiky: [{ threshold: "avg<60", window: "stage", scenario: "s", abortOnFail: true }] },
};
export default function () {
  v.add(exec.scenario.stage.index === 0 ? 100 : 0);
  sleep(0.02);
}
