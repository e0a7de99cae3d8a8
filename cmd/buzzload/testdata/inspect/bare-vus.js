export const options = { vus: 5, scenarios: { s: { executor: 'shared-iterations', iterations: 3 } } }; export default function(){}
