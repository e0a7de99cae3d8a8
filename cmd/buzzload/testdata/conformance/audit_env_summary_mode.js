// K6_SUMMARY_MODE=disabled (env, not a flag) disables the summary and
// handleSummary is not called.
// env: K6_SUMMARY_MODE=disabled
// exit: 0
// stdout-empty:
// !stderr: summary called
export default function () {}
export function handleSummary() { console.log("summary called"); return { stdout: "x" }; }
