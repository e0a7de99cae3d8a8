// --summary-trend-stats and --summary-time-unit shape both the text summary
// and handleSummary's data (values has exactly the chosen stats, spelled as
// given); returning null still prints the default summary.
// args: -i 2 --summary-trend-stats avg,p(99.9),count --summary-time-unit s
// exit: 0
// stderr: keys=avg,count,p(99.9) opts=avg,p(99.9),count unit=s
// stdout: TOTAL RESULTS
// stdout: p(99.9)=
// stdout: count=2
// !stdout: med=
// !stdout: p(95)=
export default function () {}
export function handleSummary(d) {
  console.log(`keys=${Object.keys(d.metrics.iteration_duration.values).sort().join(",")} opts=${d.options.summaryTrendStats.join(",")} unit=${d.options.summaryTimeUnit}`);
  return null;
}
