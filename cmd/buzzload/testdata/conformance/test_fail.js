// test.fail() lets the run continue and exits 110.
// args: -i 3
// exit: 110
// stderr: test marked as failed: bad data
// iterations: 3
import exec from "k6/execution";
export default function () { if (__ITER === 0) exec.test.fail("bad data"); }
