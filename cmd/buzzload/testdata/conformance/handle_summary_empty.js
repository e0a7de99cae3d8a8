// handleSummary returning {} prints nothing at all.
// exit: 0
// stdout-empty:
export default function () {}
export function handleSummary() { return {}; }
