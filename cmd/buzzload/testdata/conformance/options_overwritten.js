// Every VU's `options` export shows the merged values (§1.2).
// args: -u 2 --tag run=ci
// exit: 0
// stderr: vus=2 iterations=2 tag=ci
export const options = { vus: 1, iterations: 2, tags: { run: "script" } };
export default function () {
  if (__ITER === 0) console.log("vus=" + options.vus + " iterations=" + options.iterations + " tag=" + options.tags.run);
}
