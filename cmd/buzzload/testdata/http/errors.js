// k6's error codes for refused connections, timeouts, resets and bad URLs;
// failed requests still count in http_reqs and http_req_failed, tagged with
// error_code, and are logged as "Request Failed".
// args: -i 1
// exit: 0
// count-stderr: Request Failed = 5
// stderr: connect: connection refused
import http from "k6/http";
import { check } from "k6";
export const options = {
  thresholds: {
    checks: ["rate==1"],
    "http_reqs{error_code:1212}": ["count==1"],
    "http_reqs{error_code:1050}": ["count==1"],
    "http_req_failed": ["rate==1"],
  },
};
export default function () {
  const refused = http.get(`http://${__ENV.REFUSED}/`);
  check(refused, {
    "refused 1212": (r) => r.status === 0 && r.error_code === 1212 && r.error.includes("connection refused"),
    "no body": (r) => r.body === null,
  });
  const slow = http.get(`${__ENV.BASE}/delay/2000`, { timeout: "100ms" });
  check(slow, {
    "timeout 1050": (r) => r.error_code === 1050 && r.error === "request timeout",
    "timeout took about 100ms": (r) => r.timings.duration < 1500,
  });
  const reset = http.get(`${__ENV.BASE}/close`);
  check(reset, { "closed connection is an error": (r) => r.status === 0 && r.error_code >= 1000 });
  // k6 v2.2.0 (observed): a URL that parses without a scheme is sent and
  // refused by the transport, 1000 with the bare cause.
  const bad = http.get("not a url");
  check(bad, { "no scheme: 1000": (r) => r.error_code === 1000 && r.error === 'unsupported protocol scheme ""' });
  // k6 v2.2.0's text for a URL without a scheme (observed).
  const noScheme = http.get("127.0.0.1:1/x");
  check(noScheme, { "no scheme: k6's text": (r) => r.error_code === 1020 &&
    r.error === 'invalid URL: parse "127.0.0.1:1/x": first path segment in URL cannot contain colon' });
}
