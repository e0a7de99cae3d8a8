// Every VU's `options` export shows the merged values (§1.2), nested ones
// and those the script did not set included.
// args: -u 2 --tag run=ci
// exit: 0
// stderr: vus=2 iterations=2 tag=ci executor=shared-iterations stats=true,avg keys=vus,iterations,tags
export const options = { vus: 1, iterations: 2, tags: { run: "script" } };
export default function () {
  if (__ITER === 0) {
    console.log("vus=" + options.vus + " iterations=" + options.iterations + " tag=" + options.tags.run +
      " executor=" + options.scenarios.default.executor +
      " stats=" + [Array.isArray(options.summaryTrendStats), options.summaryTrendStats[0]] +
      " keys=" + Object.keys(options).slice(0, 3));
  }
}
