// exit: 104
// stderr: warp-speed
export const options = { scenarios: { s: { executor: "warp-speed" } } };
export default function () {}
