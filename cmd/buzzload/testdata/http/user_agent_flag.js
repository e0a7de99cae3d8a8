// --user-agent overrides the script's userAgent (flags win over the script).
// args: -i 1 --user-agent flag-agent/2
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { userAgent: "script-agent/1", thresholds: { checks: ["rate==1"] } };
export default function () {
  check(http.get(`${__ENV.BASE}/echo`).json(), { "flag wins": (e) => e.headers["User-Agent"] === "flag-agent/2" });
}
