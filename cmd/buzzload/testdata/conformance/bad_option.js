// exit: 104
// stderr: vus
export const options = { vus: "many" };
export default function () {}
