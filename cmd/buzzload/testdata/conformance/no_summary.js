// --summary-mode=disabled: no summary and handleSummary is not called.
// args: --summary-mode=disabled
// exit: 0
// stdout-empty:
export default function () {}
export function handleSummary() { return { stdout: "should not run" }; }
