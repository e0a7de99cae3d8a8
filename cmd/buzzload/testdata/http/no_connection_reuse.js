// noConnectionReuse: every request its own connection.
// args: -i 3
// exit: 0
import http from "k6/http";
export const options = { noConnectionReuse: true };
export default function () {
  http.get(`${__ENV.BASE}/echo`);
  http.get(`${__ENV.BASE}/echo`);
}
export function teardown() {
  const n = Number(http.get(`${__ENV.BASE}/conns`).body);
  if (n !== 7) throw new Error(`connections: ${n}, want 7`);
}
