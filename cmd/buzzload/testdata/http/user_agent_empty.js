// userAgent: "" sends no User-Agent at all (not Go's default); --user-agent
// and K6_USER_AGENT set it like the option.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { userAgent: "", thresholds: { checks: ["rate==1"] } };
export default function () {
  check(http.get(`${__ENV.BASE}/echo`).json(), { "no user agent": (e) => e.headers["User-Agent"] === undefined });
}
