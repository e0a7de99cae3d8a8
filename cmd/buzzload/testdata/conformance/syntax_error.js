// A syntax error is an init exception: 107, naming file:line:column.
// exit: 107
// stderr: syntax_error.js:5:11
export default function () {
  let x = = 3;
}
