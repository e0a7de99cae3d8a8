// Keep-alive connections are reused within a VU and never shared between
// VUs: 2 VUs x 3 iterations x 2 requests open exactly 2 connections.
// per-vu-iterations, so both VUs run (with --vus 2 --iterations 6, shared
// iterations, a busy machine let one VU take all six: 1 connection).
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = {
  scenarios: { conns: { executor: "per-vu-iterations", vus: 2, iterations: 3 } },
  thresholds: { checks: ["rate==1"], http_reqs: ["count==13"] },
};
export default function () {
  http.get(`${__ENV.BASE}/echo`);
  http.get(`${__ENV.BASE}/echo`);
}
export function teardown() {
  const n = Number(http.get(`${__ENV.BASE}/conns`).body);
  // teardown's own VU opens one more connection.
  check(n, { "one connection per VU (+ teardown)": (n) => n === 3 });
  if (n !== 3) throw new Error(`connections: ${n}`);
}
