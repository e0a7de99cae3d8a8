// args: --include-system-env-vars=false -e ONLY=flag
// env: SYSTEM_ONLY=sys
// exit: 0
// stderr: env=undefined,flag
export default function () { console.log("env=" + String(__ENV.SYSTEM_ONLY) + "," + __ENV.ONLY); }
