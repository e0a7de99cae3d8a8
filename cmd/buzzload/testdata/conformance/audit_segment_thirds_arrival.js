// §3.3: arrival-rate under segments splits by a sequence derived from maxVUs
// (5): 12/s for 1s on the last third runs 2 iterations, global ids 2 and 7.
// args: --execution-segment 2/3:1 --execution-segment-sequence 0,1/3,2/3,1
// exit: 0
// iterations: 2
// stderr: it=2 
// stderr: it=7 
import exec from "k6/execution";
export const options = { scenarios: { a: { executor: "constant-arrival-rate", rate: 12, duration: "1s", preAllocatedVUs: 5 } } };
export default function () { console.log(`it=${exec.scenario.iterationInTest} `); }
