// -d over a script's scenarios replaces them, with k6's warning.
// args: -d 1s
// exit: 0
// stderr: level configuration overrode scenarios configuration entirely
export const options = { scenarios: { s: { executor: "shared-iterations", iterations: 2 } } };
export default function () {}
