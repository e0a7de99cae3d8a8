// An abortOnFail threshold stops the run at the first 2 s check: exit 99,
// teardown still runs.
// exit: 99
// stderr: teardown ran
// stderr: abortOnFail
export const options = {
  vus: 1, duration: "20s",
  thresholds: { iterations: [{ threshold: "count<5", abortOnFail: true }] },
};
export default function () {}
export function teardown() { console.log("teardown ran"); }
