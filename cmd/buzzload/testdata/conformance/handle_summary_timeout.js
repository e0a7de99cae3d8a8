// A handleSummary that runs past handleSummaryTimeout: k6 v2.2.0 (observed)
// logs where it stopped and the failure, prints no summary and exits 0
// (v1.8.1 exited 102).
// exit: 0
// stdout-empty:
// stderr: context canceled at handleSummary (file:///
// stderr: msg="failed to handle the end-of-test summary" error="handleSummary() execution timed out after 0 seconds"
export const options = { handleSummaryTimeout: "200ms" };
export default function () {}
export function handleSummary() { for (;;) {} }
