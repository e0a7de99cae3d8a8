// Methods, echo of method/headers/body, status codes and error codes, the
// Response fields, and the built-in metrics counted per request.
// args: -i 1
// exit: 0
// stdout: http_reqs
// stdout: http_reqs......................: 10
import http from "k6/http";
import { check } from "k6";

export const options = { thresholds: { checks: ["rate==1"], http_reqs: ["count==10"] } };

export default function () {
  const B = __ENV.BASE;
  const g = http.get(`${B}/echo?a=1`, { headers: { "X-Test": "yes" } });
  const e = g.json();
  check(g, {
    "get 200": (r) => r.status === 200 && r.status_text === "200 OK",
    "echo method": () => e.method === "GET" && e.query === "a=1",
    "echo header": () => e.headers["X-Test"] === "yes",
    "default user agent": () => /^buzzload\/\S+$/.test(e.headers["User-Agent"]), // k6 v2.2: "Grafana k6/2.2.0"
    "proto": (r) => r.proto === "HTTP/1.1",
    "remote ip": (r) => r.remote_ip === "127.0.0.1" && r.remote_port > 0,
    "headers joined": (r) => r.headers["X-Multi"] === "a, b" && r.headers["Content-Type"] === "application/json",
    "timings": (r) => r.timings.duration > 0 && r.timings.duration >= r.timings.waiting,
    "request echo": (r) => r.request.method === "GET" && r.request.headers["X-Test"][0] === "yes",
    "json selector": (r) => r.json("headers.X-Test") === "yes",
    "no error": (r) => r.error === "" && r.error_code === 0,
  });
  const p = http.post(`${B}/echo`, JSON.stringify({ x: 1 }), { headers: { "Content-Type": "application/json" } });
  check(p, { "post body": (r) => r.json().body === '{"x":1}' && r.json().method === "POST" });
  const f = http.put(`${B}/echo`, { a: "1", b: "two" });
  check(f, { "form body": (r) => r.json().body === "a=1&b=two" && r.json().headers["Content-Type"] === "application/x-www-form-urlencoded" });
  check(http.patch(`${B}/echo`, "p"), { "patch": (r) => r.json().method === "PATCH" });
  check(http.del(`${B}/echo`), { "delete": (r) => r.json().method === "DELETE" });
  check(http.options(`${B}/echo`), { "options": (r) => r.json().method === "OPTIONS" });
  check(http.head(`${B}/echo`), { "head": (r) => r.status === 200 && r.body === "" });
  const nf = http.get(`${B}/status/404`);
  check(nf, { "404 code": (r) => r.status === 404 && r.error_code === 1404 });
  const se = http.request("GET", `${B}/status/503`);
  check(se, { "503 code": (r) => r.status === 503 && r.error_code === 1503 });
  let threw = "";
  try { http.get(`${B}/bytes/3`).json(); } catch (e) { threw = String(e); }
  check(threw, { "invalid JSON throws": (t) => t.includes("SyntaxError") });
}
