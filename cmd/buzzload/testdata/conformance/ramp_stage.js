// Our extension: scenario.stage {index, name} follows the ramping stages.
// exit: 0
// stderr: stage=0:warm
// stderr: stage=1:peak
import exec from "k6/execution";
import { sleep } from "k6";
export const options = {
  scenarios: {
    ramp: { executor: "ramping-vus", startVUs: 1, gracefulRampDown: "0s",
      stages: [{ duration: "300ms", target: 1, name: "warm" }, { duration: "300ms", target: 1, name: "peak" }] },
  },
};
let last = "";
export default function () {
  const s = exec.scenario.stage;
  const cur = "stage=" + s.index + ":" + s.name;
  if (cur !== last) { console.log(cur); last = cur; }
  sleep(0.05);
}
