// handleSummary may write files (relative to the CWD), stdout and stderr.
// args: --summary-export {tmp}/export.json
// env: OUT_DIR={tmp}
// exit: 0
// stdout: to stdout
// stderr: to stderr
// file: {tmp}/report.txt = report body
// file-contains: {tmp}/export.json = "value": 1
import { check } from "k6";
export default function () { check(1, { one: (v) => v === 1 }); }
export function handleSummary(data) {
  return { stdout: "to stdout", stderr: "to stderr", [__ENV.OUT_DIR + "/report.txt"]: "report body" };
}
