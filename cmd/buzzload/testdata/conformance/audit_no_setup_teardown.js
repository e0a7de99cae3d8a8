// --no-setup and --no-teardown: neither runs, VUs get undefined data.
// args: --no-setup --no-teardown -i 1
// exit: 0
// stderr: data=undefined
// !stderr: setup ran
// !stderr: teardown ran
export function setup() { console.log("setup ran"); return { x: 1 }; }
export default function (d) { console.log("data=" + JSON.stringify(d)); }
export function teardown() { console.log("teardown ran"); }
