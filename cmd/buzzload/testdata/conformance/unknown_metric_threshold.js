// exit: 104
// stderr: no_such_metric
export const options = { thresholds: { no_such_metric: ["count>1"] } };
export default function () {}
