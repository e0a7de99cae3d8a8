// Appendix 7: handleSummary returning undefined prints the default summary.
// exit: 0
// stdout: TOTAL RESULTS
export default function () {}
export function handleSummary() {}
