// A handleSummary that runs past handleSummaryTimeout: exit 102.
// exit: 102
// stderr: handleSummary() execution timed out
export const options = { handleSummaryTimeout: "200ms" };
export default function () {}
export function handleSummary() { for (;;) {} }
