// Exceptions and fail() in iterations are logged; the exit code stays 0 and
// the iterations still count.
// args: -i 2
// exit: 0
// stderr: iteration_throw.js:11:27
// stderr: msg="Error: failed on purpose\n\tat fail (native)
// !stderr: github.com
// iterations: 2
import { fail } from "k6";
export default function () {
  if (__ITER === 0) throw new Error("iteration went wrong");
  fail("failed on purpose");
}
