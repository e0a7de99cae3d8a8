// http.batch: array and object forms, string / array / object items, run in
// parallel (4 x 300 ms in well under 1.2 s) and bounded by batchPerHost.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { batchPerHost: 4, thresholds: { checks: ["rate==1"], http_reqs: ["count==9"] } };
export default function () {
  const B = __ENV.BASE;
  const t0 = Date.now();
  const rs = http.batch([`${B}/delay/300`, ["GET", `${B}/delay/300`], { method: "GET", url: `${B}/delay/300` }, ["POST", `${B}/echo`, "b", { tags: { name: "posted" } }]]);
  const took = Date.now() - t0;
  check(rs, {
    "array of 4": (r) => Array.isArray(r) && r.length === 4,
    "in order": (r) => r[0].status === 200 && r[3].json().body === "b",
    "parallel": () => took < 900,
  });
  const obj = http.batch({ a: `${B}/status/201`, b: { method: "PUT", url: `${B}/echo`, body: "x" } });
  check(obj, { "object form": (r) => r.a.status === 201 && r.b.json().method === "PUT" });
  const t1 = Date.now();
  http.batch([`${B}/delay/200`, `${B}/delay/200`, `${B}/delay/200`]);
  check(Date.now() - t1, { "three in parallel": (d) => d < 550 });
}
