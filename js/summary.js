// textSummary(data, options) with the k6-summary jslib's signature
// (https://jslib.k6.io/k6-summary/): k6's compact end-of-test text from
// handleSummary's data, for scripts that write their own handleSummary.
//
//   import { textSummary } from "buzzload/summary";
//   export function handleSummary(data) {
//     return { stdout: textSummary(data, { indent: " ", enableColors: true }), "out.json": JSON.stringify(data) };
//   }
//
// options: indent (prefix of every line, default none), enableColors
// (ANSI colours, default false).
import { textSummary as render } from "k6/x/buzzload/summary";

export function textSummary(data, options) {
  return render(data, options || {});
}
