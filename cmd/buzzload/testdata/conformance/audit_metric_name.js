// Appendix 6: a custom metric name of one character is invalid: exit 107.
// exit: 107
// stderr: invalid metric name
import { Counter } from "k6/metrics";
const c = new Counter("c");
export default function () {}
