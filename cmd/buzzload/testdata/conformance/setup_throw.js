// An exception in setup: 107, teardown is not run.
// exit: 107
// stderr: setup went wrong
// !stderr: teardown ran
export function setup() { throw new Error("setup went wrong"); }
export default function () {}
export function teardown() { console.log("teardown ran"); }
