// --start-at in the past starts at once, with a warning.
// args: --start-at 2001-01-01T00:00:00Z
// exit: 0
// stderr: starting now
export default function () {}
