// The lifecycle of spec §1.1/§1.3: init runs once for the options (VU 0),
// once per planned VU, and once each for setup, teardown and handleSummary;
// setup data is decoded once per VU and each VU keeps its own changes.
// args: -u 2 -i 4
// exit: 0
// count-stderr: init vu= = 6
// count-stderr: init vu=0 = 4
// stderr: teardown n=1
// count-stderr: setup ran = 1
// stdout: HS:iterations=4
console.log("init vu=" + __VU);
export function setup() { console.log("setup ran"); return { n: 1 }; }
export default function (data) {
  data.n++;
  if (data.n > 3) throw new Error("a VU saw another VU's changes: " + data.n);
}
export function teardown(data) { console.log("teardown n=" + data.n); }
export function handleSummary(data) {
  return { stdout: "HS:iterations=" + data.metrics.iterations.values.count + " setup=" + data.setup_data.n };
}
