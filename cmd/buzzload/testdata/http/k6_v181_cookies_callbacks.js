// More of what k6 v1.8.1 does, observed side by side (issue 28 item 3): the
// Cookie header has params.cookies first, then the jar's; Response.request
// after a redirect is the first request's; http.expectedStatuses and
// http.setResponseCallback refuse bad arguments with k6's GoErrors.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"] } };
function thrown(f) {
  try { f(); } catch (e) { return String(e); }
  return "";
}
export default function () {
  const jar = http.cookieJar();
  jar.set(`${__ENV.BASE}/`, "zeta", "1");
  const r = http.get(`${__ENV.BASE}/echo`, { cookies: { mid: "3", beta: "4" } });
  check(r, { "params cookies first": (x) => x.json("headers.Cookie") === "mid=3; beta=4; zeta=1" });
  const d = http.get(`${__ENV.BASE}/redirect/1`);
  check(d, {
    "the response is the last hop's": (x) => x.url.endsWith("/redirect/0") && x.status === 200,
    "the request is the first": (x) => x.request.url.endsWith("/redirect/1"),
  });
  check(null, {
    "no arguments": () => thrown(() => http.expectedStatuses()) === "GoError: no arguments",
    "a string": () => thrown(() => http.expectedStatuses(200, "x")) ===
      "GoError: argument number 2 to expectedStatuses was neither an integer nor an object like {min:100, max:329}",
    "a half range": () => thrown(() => http.expectedStatuses({ min: 500 })).startsWith("GoError: argument number 1 "),
    "a fraction": () => thrown(() => http.expectedStatuses(200.5)).startsWith("GoError: argument number 1 "),
    "a reversed range is taken": () => thrown(() => http.expectedStatuses({ min: 200, max: 100 })) === "",
    "setResponseCallback": () => thrown(() => http.setResponseCallback({})) === "GoError: unsupported argument, expected http.expectedStatuses",
  });
}
