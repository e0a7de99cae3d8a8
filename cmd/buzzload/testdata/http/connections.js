// Keep-alive connections are reused within a VU and never shared between
// VUs: 2 VUs x 3 iterations x 2 requests open exactly 2 connections.
// args: --vus 2 --iterations 6
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"], http_reqs: ["count==13"] } };
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
