// §1.8: exec.test.options holds the derived scenarios; the shortcut fields
// are deleted because they became scenarios.
// args: -i 2 -u 1
// exit: 0
// stderr: scenarios=default:shared-iterations vus=undefined iterations=undefined
import exec from "k6/execution";
export default function () {
  if (__ITER === 0) {
    const o = exec.test.options;
    const sc = o.scenarios ? Object.keys(o.scenarios).map((k) => k + ":" + o.scenarios[k].executor).join(",") : "missing";
    console.log(`scenarios=${sc} vus=${o.vus} iterations=${o.iterations}`);
  }
}
