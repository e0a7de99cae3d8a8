// Buzz's HTTP API driven with k6/http: each request is signed with
// buzz.nip98 as one of the scenario's clients (NIP-98 Authorization, plus
// x-auth-tag for agents), so k6's own metrics (http_reqs, http_req_duration
// by name, http_req_failed), checks and thresholds judge it.
//
//   buzzload run examples/http-nip98.js          (embedded relay, ~10 s)
import http from "k6/http";
import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { check, sleep } from "k6";

const sc = buzz.load("./custom-lowlevel.toml");
const HUMANS = sc.peak().human;

export const options = {
  scenarios: {
    readers: { executor: "constant-vus", vus: 2, duration: __ENV.DURATION || "10s", exec: "read" },
  },
  thresholds: {
    checks: ["rate==1"],
    "http_req_duration{name:query}": ["p(95)<500"],
    "http_req_failed{name:query}": ["rate==0"],
    "http_reqs{name:unsigned}": ["count>0"],
  },
};

export function setup() {
  sc.setup();
  return { channel: sc.channelId(0, 0) };
}

export function read(data) {
  const c = sc.client("human", exec.scenario.iterationInTest % HUMANS);
  const url = c.httpTarget.replace(/\/$/, "") + "/query";
  const body = JSON.stringify([{ kinds: [9], "#h": [data.channel], limit: 5 }]);
  const headers = Object.assign({ "Content-Type": "application/json", Host: c.host }, buzz.nip98("POST", url, body, c));
  const res = http.post(url, body, { headers, tags: { name: "query" } });
  check(res, {
    "signed query is 200": (r) => r.status === 200,
    "returns the seeded history": (r) => Array.isArray(r.json()) && r.json().length > 0,
  });
  // Without the signature Buzz answers 401: k6 records it as a failed request.
  const anon = http.post(url, body, { headers: { "Content-Type": "application/json", Host: c.host }, tags: { name: "unsigned" } });
  check(anon, { "unsigned query is refused": (r) => r.status === 401 && r.error_code === 1401 });
  sleep(0.2);
}

export function teardown() {
  sc.teardown();
}

export function handleSummary(data) {
  return sc.report(data, { json: __ENV.BUZZ_REPORT || "" });
}
