// Appendix 5: segment 1/3:2/3 of 0,1/3,2/3,1, shared-iterations 5 VUs / 10
// iterations: this instance runs 4 (ids 1,4,6,9) on VUs with idInTest 2 and 5.
// args: --execution-segment 1/3:2/3 --execution-segment-sequence 0,1/3,2/3,1
// exit: 0
// iterations: 4
// stderr: it=1 
// stderr: it=4 
// stderr: it=6 
// stderr: it=9 
// !stderr: it=0 
// !stderr: it=3 
// !stderr: vu=1 
// !stderr: vu=3 
// !stderr: vu=4 
import exec from "k6/execution";
export const options = { scenarios: { s: { executor: "shared-iterations", vus: 5, iterations: 10 } } };
export default function () { console.log(`it=${exec.scenario.iterationInTest} vu=${exec.vu.idInTest} `); }
