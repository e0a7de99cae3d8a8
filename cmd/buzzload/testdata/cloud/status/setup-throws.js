export const options = { vus: 1, iterations: 1 };
export function setup() { throw new Error('boom'); }
export default function () { }
