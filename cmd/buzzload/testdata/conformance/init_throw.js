// exit: 107
// stderr: init went wrong
throw new Error("init went wrong");
export default function () {}
