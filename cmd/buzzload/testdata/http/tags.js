// HTTP samples carry the VU's tags: group (::setup in setup, ::a::b inside
// groups), scenario, test-wide and per-request tags; method and status.
// args: --tag run=t1
// exit: 0
import http from "k6/http";
import { group } from "k6";
export const options = {
  scenarios: { api: { executor: "shared-iterations", iterations: 1, tags: { team: "x" } } },
  thresholds: {
    "http_reqs{group:::setup}": ["count==1"],
    "http_reqs{group:::a::b}": ["count==1"],
    "http_reqs{scenario:api}": ["count==2"],
    "http_reqs{team:x}": ["count==2"],
    "http_reqs{run:t1}": ["count==3"],
    "http_reqs{extra:yes}": ["count==1"],
    "http_reqs{method:POST}": ["count==1"],
    "http_reqs{status:201}": ["count==1"],
  },
};
export function setup() { http.get(`${__ENV.BASE}/echo`); }
export default function () {
  group("a", () => group("b", () => http.post(`${__ENV.BASE}/echo`, "x")));
  http.get(`${__ENV.BASE}/status/201`, { tags: { extra: "yes" } });
}
