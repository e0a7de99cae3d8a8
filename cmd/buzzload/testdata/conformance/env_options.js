// K6_ITERATIONS (real env) overrides the script; -e K6_ITERATIONS does not.
// args: -e K6_ITERATIONS=9
// env: K6_ITERATIONS=3
// exit: 0
// iterations: 3
export const options = { iterations: 1 };
export default function () {}
