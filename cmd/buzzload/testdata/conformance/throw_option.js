// With throw (or -w) an invalid metric value throws instead of warning; the
// exception ends the iteration like any other (exit 0).
// args: -w
// exit: 0
// stderr: my_counter.add(abc): the value is not a number
// !stderr: sample was dropped
import { Counter } from "k6/metrics";
const c = new Counter("my_counter");
export default function () { c.add("abc"); }
