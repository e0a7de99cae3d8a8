// abortOnFail with delayAbortEval 3s on a 10 s test: the 2 s check must not
// abort (3s > 2s); the 4 s check does. Exit 99, teardown still runs.
// exit: 99
// stderr: teardown ran
// stderr: window=true
import { Counter } from "k6/metrics";
import { sleep } from "k6";
const bad = new Counter("audit_bad");
export const options = { vus: 1, duration: "10s", thresholds: { audit_bad: [{ threshold: "count<1", abortOnFail: true, delayAbortEval: "3s" }] } };
export default function () { bad.add(1); sleep(0.1); }
export function teardown() { console.log("teardown ran"); }
export function handleSummary(d) {
  const ms = d.state.testRunDurationMs;
  console.log(`window=${ms > 3000 && ms < 9000} ms=${ms}`);
  return {};
}
