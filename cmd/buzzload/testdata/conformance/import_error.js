// An error inside an imported module names that module's file and line.
// exit: 107
// stderr: lib/thrower.js:3:
import "./lib/thrower.js";
export default function () {}
