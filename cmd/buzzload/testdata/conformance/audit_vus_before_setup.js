// §1.1 step 3: all planned VUs are initialised before setup() runs (the
// plan's peak: 3 here, two overlapping scenarios 2 + 1).
// exit: 0
// stderr: setup sees vusInitialized=3
import exec from "k6/execution";
export const options = { scenarios: {
  a: { executor: "per-vu-iterations", vus: 2, iterations: 1 },
  b: { executor: "shared-iterations", vus: 1, iterations: 1 },
} };
export function setup() { console.log("setup sees vusInitialized=" + exec.instance.vusInitialized); }
export default function () {}
