// What k6 v1.8.1 does, observed side by side (issue 28 item 3): the method
// is sent as written; timings carry looking_up, k6's keys in k6's order,
// and blocked is never below connecting; a missing res.json() path is
// undefined; Response.error is the bare cause (`EOF`) and an unsupported
// scheme is error_code 1000; a request's own { throw: true } throws a
// GoError with the whole message; the summary data has
// http_req_duration{expected_response:true} once requests were made; a
// network error is failed unless the response callback names status 0.
// args: -i 1
// exit: 0
// stdout: has expected_response: true
import http from "k6/http";
import { check } from "k6";
// A network error (status 0) is failed unless the callback names 0.
export const options = { noConnectionReuse: true, thresholds: { checks: ["rate==1"],
  "http_req_failed{name:zero}": ["rate==0"], "http_req_failed{name:refused}": ["rate==1"] } };
export default function () {
  const r = http.request("patch", `${__ENV.BASE}/echo`);
  check(r, {
    "method as written": (x) => x.json("method") === "patch",
    "timings keys in k6's order": (x) => Object.keys(x.timings).join(",") === "duration,blocked,looking_up,connecting,tls_handshaking,sending,waiting,receiving",
    "blocked >= connecting": (x) => x.timings.blocked >= x.timings.connecting,
    "missing json path is undefined": (x) => x.json("no.such.path") === undefined,
  });
  const closed = http.get(`${__ENV.BASE}/close`);
  check(closed, { "bare cause": (x) => x.error === "EOF" || !x.error.startsWith("Get ") });
  const ftp = http.get("ftp://127.0.0.1/");
  check(ftp, {
    "unsupported scheme is 1000": (x) => x.error_code === 1000,
    "its error is the cause": (x) => x.error === 'unsupported protocol scheme "ftp"',
  });
  let thrown = "";
  try {
    http.get(`${__ENV.BASE}/close`, { throw: true });
  } catch (e) {
    thrown = String(e);
  }
  check(thrown, { "a GoError with the whole message": (s) => s.startsWith("GoError: Get ") });
  http.get(`http://${__ENV.REFUSED}/`, { tags: { name: "refused" } });
  http.get(`http://${__ENV.REFUSED}/`, { tags: { name: "zero" }, responseCallback: http.expectedStatuses(0) });
}
export function handleSummary(data) {
  return { stdout: "has expected_response: " + ("http_req_duration{expected_response:true}" in data.metrics) + "\n" };
}
