// §2.5/§5: for looping executors the vus gauge counts the VUs in the
// scenario even when their iterations are empty: 3.
// exit: 0
// stderr: vus=3 vus_max=3
export const options = { vus: 3, duration: "1500ms" };
export default function () {}
export function handleSummary(d) {
  console.log(`vus=${d.metrics.vus.values.max} vus_max=${d.metrics.vus_max.values.max}`);
  return {};
}
