// exit: 107
// stderr: teardown went wrong
export default function () {}
export function teardown() { throw new Error("teardown went wrong"); }
