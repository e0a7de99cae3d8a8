// setup() data that JSON cannot hold (NaN, functions) is an error without a
// code: exit 255.
// exit: 255
// stderr: error marshaling setup() data to JSON
export function setup() { return { x: NaN }; }
export default function () {}
