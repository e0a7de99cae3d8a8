// exit: 104
// stderr: iteration_duration
export const options = { thresholds: { iteration_duration: ["rate<0.5"] } };
export default function () {}
