// test.abort() in teardown: 108.
// exit: 108
// stderr: test aborted: from teardown
import exec from "k6/execution";
export default function () {}
export function teardown() { exec.test.abort("from teardown"); }
