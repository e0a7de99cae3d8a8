// noCookiesReset keeps the VU's cookie jar across iterations.
// args: -i 2
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { noCookiesReset: true, thresholds: { "checks{second:yes}": ["rate==1"], checks: ["rate==1"], iterations: ["count==2"] } };
export default function () {
  const seen = http.get(`${__ENV.BASE}/cookies`).json();
  if (__ITER === 0) {
    check(seen, { "first iteration: empty jar": (c) => c.kept === undefined });
  } else {
    check(seen, { "second iteration: cookie kept": (c) => c.kept === "1" }, { second: "yes" });
  }
  http.get(`${__ENV.BASE}/cookies/set?kept=1`);
}
