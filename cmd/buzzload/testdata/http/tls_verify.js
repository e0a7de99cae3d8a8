// Without insecureSkipTLSVerify the test server's self-signed certificate
// fails with k6's unknown-authority code 1310.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"], "http_reqs{error_code:1310}": ["count==1"] } };
export default function () {
  check(http.get(`${__ENV.TLSBASE}/echo`), { "1310": (r) => r.status === 0 && r.error_code === 1310 });
}
