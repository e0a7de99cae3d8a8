// exit: 104
// stderr: function 'nope' not found in exports
export const options = { scenarios: { s: { executor: "shared-iterations", exec: "nope" } } };
export default function () {}
