// handleSummary that throws: logged, default summary printed, exit unchanged.
// exit: 0
// stderr: summary broke
// stdout: TOTAL RESULTS
export default function () {}
export function handleSummary() { throw new Error("summary broke"); }
