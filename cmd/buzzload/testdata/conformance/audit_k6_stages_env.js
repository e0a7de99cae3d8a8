// K6_STAGES (a real env var) becomes a ramping-vus "default" scenario whose
// startVUs is 1 (vus unset); a stage name is absent, index present.
// env: K6_STAGES=300ms:2,300ms:0
// exit: 0
// stderr: executor=ramping-vus scenario=default stage=0
// stderr: executor=ramping-vus scenario=default stage=1
import exec from "k6/execution";
import { sleep } from "k6";
let last = -1;
export default function () {
  const s = exec.scenario.stage.index;
  if (s !== last) { last = s; console.log(`executor=${exec.scenario.executor} scenario=${exec.scenario.name} stage=${s}`); }
  sleep(0.05);
}
