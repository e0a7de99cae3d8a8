// Errata 6: after teardown() throws (exit 107) handleSummary still runs.
// exit: 107
// stderr: teardown broke
// stdout: hs ran
export default function () {}
export function teardown() { throw new Error("teardown broke"); }
export function handleSummary() { return { stdout: "hs ran\n" }; }
