export const options = { scenarios: { s: { executor: "constant-vus", vus: 2, duration: "5s" } } };
export default function () {}
