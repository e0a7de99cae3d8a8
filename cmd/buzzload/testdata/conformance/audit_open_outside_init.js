// §1.6: open() outside init throws; in an iteration that is an iteration
// error (logged, exit 0), and the iteration still counts.
// args: -i 1
// exit: 0
// stderr: init context
// iterations: 1
export default function () { open("audit_open_outside_init.js"); }
