// test.abort() in an iteration: 108; teardown and the summary still run.
// args: -u 1 -d 10s
// exit: 108
// stderr: test aborted: enough
// stderr: teardown ran
// stdout: TOTAL RESULTS
import exec from "k6/execution";
export default function () { exec.test.abort("enough"); }
export function teardown() { console.log("teardown ran"); }
