// --no-thresholds: nothing is parsed or judged, so an unknown metric and a
// failing expression give exit 0, not 104 or 99.
// args: -i 1 --no-thresholds
// exit: 0
// !stderr: have been crossed
import { Counter } from "k6/metrics";
const c = new Counter("audit_c");
export const options = { thresholds: { no_such_metric: ["count>1"], audit_c: ["count>5"] } };
export default function () { c.add(1); }
