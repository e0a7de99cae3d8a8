// §1.3 / appendix 1 and 9 (with errata 1-2): each VU decodes setup data once
// and keeps its own changes (2 then 3 in each of 2 VUs, never 4); teardown
// and handleSummary get the original; Go-JSON conversions: undefined → null,
// Date → RFC 3339 (milliseconds kept), Map → pairs, Set → array.
// exit: 0
// count-stderr: seen n=2 = 2
// count-stderr: seen n=3 = 2
// !stderr: seen n=4
// stderr: teardown n=1
// stderr: shape={\"d\":\"2011-11-12T13:14:15.25Z\",\"u\":null,\"m\":[[1,2]],\"s\":[3]}
// stdout: hs n=1
export const options = { scenarios: { p: { executor: "per-vu-iterations", vus: 2, iterations: 2 } } };
export function setup() {
  return { n: 1, d: new Date(1321103655250), u: undefined, m: new Map([[1, 2]]), s: new Set([3]) };
}
export default function (data) {
  data.n++;
  console.log("seen n=" + data.n);
  if (__ITER === 0 && __VU === 1) console.log("shape=" + JSON.stringify({ d: data.d, u: data.u, m: data.m, s: data.s }));
}
export function teardown(data) { console.log("teardown n=" + data.n); }
export function handleSummary(d) { return { stdout: "hs n=" + d.setup_data.n + "\n" }; }
