// A segment outside its sequence is a config error (104).
// args: --execution-segment 1/4:1/2 --execution-segment-sequence 0,1/3,1
// exit: 104
// stderr: can't be found in sequence
export default function () {}
