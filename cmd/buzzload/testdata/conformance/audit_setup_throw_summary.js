// Errata 6: after setup() throws (exit 107) teardown does not run but
// handleSummary still does.
// exit: 107
// stderr: setup broke
// !stderr: teardown ran
// stdout: hs ran
export function setup() { throw new Error("setup broke"); }
export default function () {}
export function teardown() { console.log("teardown ran"); }
export function handleSummary() { return { stdout: "hs ran\n" }; }
