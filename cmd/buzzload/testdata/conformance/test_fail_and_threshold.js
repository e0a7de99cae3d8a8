// test.fail() together with a failing threshold exits 110 (errata 7).
// exit: 110
import exec from "k6/execution";
export const options = { thresholds: { iterations: ["count>5"] } };
export default function () { exec.test.fail("both"); }
