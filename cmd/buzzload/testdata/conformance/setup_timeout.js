// exit: 100
// stderr: msg="setup() execution timed out after 0 seconds" hint="You can increase the time limit via the setupTimeout option"
export const options = { setupTimeout: "200ms" };
export function setup() { for (;;) {} }
export default function () {}
