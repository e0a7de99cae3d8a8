// §2.7: for arrival-rate executors the vus gauge counts VUs running an
// iteration, not VUs allocated: 10 pre-allocated VUs doing empty iterations
// at 2/s read (almost) 0, while vus_max reads 10. Sampled once a second, so
// the run lasts 1.5 s.
// exit: 0
// stderr: vus-low=true vus_max=10
export const options = { scenarios: { c: { executor: "constant-arrival-rate", rate: 2, duration: "1500ms", preAllocatedVUs: 10 } } };
export default function () {}
export function handleSummary(d) {
  console.log(`vus-low=${d.metrics.vus.values.max <= 1} vus_max=${d.metrics.vus_max.values.max}`);
  return {};
}
