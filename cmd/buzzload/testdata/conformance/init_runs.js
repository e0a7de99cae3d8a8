// The init context runs once for the options, once per VU and once more for
// the end-of-test summary whether or not handleSummary is exported: three
// times for one VU, as k6 v2.2.0 runs it (observed; v1.8.1 ran it twice).
// args: -i 1
// exit: 0
// count-stderr: init-ran = 3
console.log("init-ran " + __VU);
export default function () {}
