// §1.2: unknown keys inside a scenario are a hard error (strict decoding):
// exit 104 naming the key. (k6 [run] badfield.js → 104.)
// exit: 104
// stderr: startime
export const options = { scenarios: { s: { executor: "shared-iterations", startime: "1s" } } };
export default function () {}
