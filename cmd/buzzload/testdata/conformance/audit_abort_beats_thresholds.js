// First error wins (§4.5): test.abort() then thresholds that fail at the end
// still exits 108, not 99; the aborting iteration still counts (errata 5).
// args: -i 3
// exit: 108
// stderr: test aborted: stop here
// iterations: 1
import exec from "k6/execution";
import { Counter } from "k6/metrics";
const c = new Counter("audit_never");
export const options = { thresholds: { audit_never: ["count>5"] } };
export default function () { exec.test.abort("stop here"); }
