// batchPerHost: 1 serialises a batch to one host (3 x 200 ms >= 600 ms).
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { batchPerHost: 1, thresholds: { checks: ["rate==1"] } };
export default function () {
  const t0 = Date.now();
  http.batch([`${__ENV.BASE}/delay/200`, `${__ENV.BASE}/delay/200`, `${__ENV.BASE}/delay/200`]);
  check(Date.now() - t0, { "serialised": (d) => d >= 590 });
}
