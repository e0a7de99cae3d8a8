// An arrival-rate scenario without enough VUs drops starts: the
// dropped_iterations samples reach the summary and the warning is logged.
// exit: 0
// stderr: Insufficient VUs
// stdout: dropped_iterations
import { sleep } from "k6";
export const options = {
  scenarios: { c: { executor: "constant-arrival-rate", rate: 20, timeUnit: "1s", duration: "1s", preAllocatedVUs: 1, gracefulStop: "0s" } },
};
export default function () { sleep(0.3); }
