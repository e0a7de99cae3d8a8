// exit: 100
// stderr: setup() execution timed out after 200ms
export const options = { setupTimeout: "200ms" };
export function setup() { for (;;) {} }
export default function () {}
