// test.abort() in setup: 108, teardown does not run, handleSummary does.
// exit: 108
// !stderr: teardown ran
// stdout: summary ran
import exec from "k6/execution";
export function setup() { exec.test.abort("from setup"); }
export default function () {}
export function teardown() { console.log("teardown ran"); }
export function handleSummary() { return { stdout: "summary ran" }; }
