// textSummary from buzzload/summary renders k6's summary inside a script's own
// handleSummary (k6-summary jslib signature), next to other outputs.
// args: -i 2 -e OUT={tmp}/out.json
// exit: 0
// stdout: █ THRESHOLDS
// stdout:  ✓ 'count==2' count=2
// stdout:  ✓ one
// stdout:  iterations...........: 2
// stdout: custom: yes
// file-contains: {tmp}/out.json = "iterations"
import { textSummary } from "buzzload/summary";
import { check } from "k6";
export const options = { thresholds: { iterations: ["count==2"] } };
export default function () { check(1, { one: (x) => x === 1 }); }
export function handleSummary(data) {
  return { stdout: textSummary(data, { indent: " ", enableColors: false }) + "custom: yes\n", [__ENV.OUT]: JSON.stringify(data) };
}
