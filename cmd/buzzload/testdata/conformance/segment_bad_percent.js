// Only integer percentages parse; k6 exits 255 for this one.
// args: --execution-segment 12.5%
// exit: 255
// stderr: 12.5%
export default function () {}
