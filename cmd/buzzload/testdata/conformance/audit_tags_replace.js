// §1.11: a higher layer replaces the whole tags map: --tag b=cli drops the
// script's tag a.
// args: -i 1 --tag b=cli
// exit: 0
// stderr: a=undefined b=cli
import exec from "k6/execution";
export const options = { tags: { a: "script" } };
export default function () { console.log(`a=${exec.vu.tags.a} b=${exec.vu.tags.b}`); }
