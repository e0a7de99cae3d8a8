// §4.4: with --no-thresholds broken definitions only produce warnings.
// args: -i 1 --no-thresholds
// exit: 0
// stderr: no_such_metric
export const options = { thresholds: { no_such_metric: ["count>1"] } };
export default function () {}
