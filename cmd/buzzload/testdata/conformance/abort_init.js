// exit: 108
import exec from "k6/execution";
exec.test.abort("not even starting");
export default function () {}
