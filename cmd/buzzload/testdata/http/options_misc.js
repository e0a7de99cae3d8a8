// userAgent, hosts, discardResponseBodies (responseType overrides it) and
// the name tag from http.url templates and params.tags (url takes the name).
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
const port = __ENV.BASE.split(":").pop();
export const options = {
  userAgent: "my-agent/1.0",
  hosts: { "test.internal": "127.0.0.1" },
  discardResponseBodies: true,
  thresholds: {
    checks: ["rate==1"],
    "http_reqs{name:${}/echo?id=${}}": ["count==2"],
    "http_reqs{url:${}/echo?id=${}}": ["count==2"],
    "http_reqs{name:grouped}": ["count==1"],
    "http_reqs{url:grouped}": ["count==1"],
  },
};
export default function () {
  const H = `http://test.internal:${port}`;
  const a = http.get(http.url`${H}/echo?id=${1}`);
  check(a, { "discarded": (r) => r.status === 200 && r.body === null, "url": (r) => r.url === `${H}/echo?id=1` });
  const b = http.get(http.url`${H}/echo?id=${2}`, { responseType: "text" });
  check(b.json(), { "user agent": (e) => e.headers["User-Agent"] === "my-agent/1.0", "host": (e) => e.host === `test.internal:${port}` });
  const c = http.get(`${H}/echo`, { responseType: "binary", tags: { name: "grouped" } });
  check(c, { "binary body": (r) => r.body instanceof ArrayBuffer && r.body.byteLength > 10 });
}
