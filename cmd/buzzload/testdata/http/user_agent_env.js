// K6_USER_AGENT overrides the script's userAgent (env over script).
// args: -i 1
// env: K6_USER_AGENT=env-agent/3
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { userAgent: "script-agent/1", thresholds: { checks: ["rate==1"] } };
export default function () {
  check(http.get(`${__ENV.BASE}/echo`).json(), { "env wins": (e) => e.headers["User-Agent"] === "env-agent/3" });
}
