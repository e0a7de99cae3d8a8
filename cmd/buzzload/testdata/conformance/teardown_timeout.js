// exit: 101
export const options = { teardownTimeout: "200ms" };
export default function () {}
export function teardown() { for (;;) {} }
