// noVUConnectionReuse: a VU's connections are dropped between iterations, so
// 3 iterations of 2 requests on 1 VU open 3 connections.
// args: -i 3
// exit: 0
import http from "k6/http";
export const options = { noVUConnectionReuse: true };
export default function () {
  http.get(`${__ENV.BASE}/echo`);
  http.get(`${__ENV.BASE}/echo`);
}
export function teardown() {
  const n = Number(http.get(`${__ENV.BASE}/conns`).body);
  if (n !== 4) throw new Error(`connections: ${n}, want 4`);
}
