// A threshold that fails at the end gives 99; the summary still prints.
// args: -i 3
// exit: 99
// stderr: thresholds on metrics 'my_count' have been crossed
// stdout: my_count
import { Counter } from "k6/metrics";
const c = new Counter("my_count");
export const options = { thresholds: { my_count: ["count>100"], iterations: ["count==3"] } };
export default function () { c.add(1); }
