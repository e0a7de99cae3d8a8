// When gracefulStop runs out, the interrupted iteration runs no more script
// code: nothing after its sleep runs or records samples (k6-compat §2.2).
// exit: 0
// !stderr: after sleep ran
import { sleep } from "k6";
import { Counter } from "k6/metrics";
const after = new Counter("after_sleep");
export const options = {
  scenarios: { s: { executor: "constant-vus", vus: 30, duration: "1s", gracefulStop: "300ms" } },
  thresholds: { after_sleep: ["count==0"] },
};
export default function () {
  sleep(3);
  after.add(1);
  console.log("after sleep ran");
}
