// Only VU 2's init throws: 107, and handleSummary still runs (errata 6).
// args: -u 2 -i 2
// exit: 107
// stderr: VU 2 cannot start
// stdout: summary ran
if (__VU === 2) throw new Error("VU 2 cannot start");
export default function () {}
export function handleSummary() { return { stdout: "summary ran" }; }
