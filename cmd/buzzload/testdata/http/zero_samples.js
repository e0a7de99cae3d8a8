// http_req_* thresholds judge real samples: a p(95) bound the requests break
// fails (before k6/http existed they passed on zero samples).
// args: -i 2
// exit: 99
// stderr: thresholds on metrics 'http_req_duration' have been crossed
import http from "k6/http";
export const options = { thresholds: { http_req_duration: ["p(95)<100"], http_req_failed: ["rate<0.01"] } };
export default function () { http.get(`${__ENV.BASE}/delay/150`); }
