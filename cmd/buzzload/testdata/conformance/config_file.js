// The config file is below the script options: the file's iterations (5)
// lose to the script's (2); its tags, not set by the script, stay.
// args: -c {dir}/config.json
// exit: 0
// iterations: 2
// stderr: tag=from-file
import exec from "k6/execution";
export const options = { iterations: 2 };
export default function () { if (__ITER === 0) console.log("tag=" + exec.vu.tags.origin); }
