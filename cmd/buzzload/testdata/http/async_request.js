// http.asyncRequest returns a promise; requests started together overlap.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"], http_reqs: ["count==3"] } };
export default async function () {
  const t0 = Date.now();
  const rs = await Promise.all([1, 2, 3].map(() => http.asyncRequest("GET", `${__ENV.BASE}/delay/300`)));
  check(rs, { "all 200": (r) => r.every((x) => x.status === 200), "overlapped": () => Date.now() - t0 < 850 });
}
