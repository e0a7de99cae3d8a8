// §4.1: a threshold selector on vu or iter (metadata) never matches; k6 logs
// a warning. thresholds.Set.Warnings has it, but the runner never logs it.
// args: -i 1
// exit: 0
// stderr: metadata
export const options = { thresholds: { "iterations{vu:1}": ["count>=0"] } };
export default function () {}
