// With the segment 0:1/2 of 0,1/2,1 this instance runs its half of the
// shared iterations and its striped VU ids (1 here; the other half has 2).
// args: --execution-segment 0:1/2 --execution-segment-sequence 0,1/2,1
// exit: 0
// iterations: 5
// stderr: idInTest=1
// !stderr: idInTest=2
import exec from "k6/execution";
export const options = { scenarios: { s: { executor: "shared-iterations", vus: 2, iterations: 10 } } };
export default function () {
  console.log("idInTest=" + exec.vu.idInTest + " iterationInTest=" + exec.scenario.iterationInTest);
}
