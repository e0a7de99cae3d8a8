// http_req_failed and expected_response follow the response callback:
// 200-399 by default, http.expectedStatuses, per-request responseCallback,
// and setResponseCallback(null) switches both off.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = {
  thresholds: {
    "http_req_failed": ["rate==0.5"],
    "http_reqs{expected_response:true}": ["count==3"],
    "http_reqs{expected_response:false}": ["count==3"],
    "http_req_duration{expected_response:true}": ["count>=0", "max>=0"].slice(1),
    http_reqs: ["count==8"],
  },
};
export default function () {
  const B = __ENV.BASE;
  http.get(`${B}/status/200`);
  http.get(`${B}/status/404`);
  http.get(`${B}/status/500`);
  http.get(`${B}/status/404`, { responseCallback: http.expectedStatuses(404) });
  http.setResponseCallback(http.expectedStatuses({ min: 200, max: 204 }, 418));
  http.get(`${B}/status/418`);
  http.get(`${B}/status/302`, { redirects: 0 });
  http.setResponseCallback(null);
  http.get(`${B}/status/500`);
  http.get(`${B}/status/500`);
}
