// Gateway profile p3 (../shared/seeds/gateway-LOAD-PROFILES.md), a plain k6
// script, shortened for tests: each 60s stage -> 1s (180s hold -> 3s) and
// the VU targets divided by 20 (10 -> 100 -> 300 -> 500 -> 0 becomes
// 1 -> 5 -> 15 -> 25 -> 0) so it fits a 2-core CI box. TARGET (default
// $BASE/echo) is the gateway URL.
import http from 'k6/http';
import { check } from 'k6';

const TARGET = __ENV.TARGET || `${__ENV.BASE}/echo`;

export const options = {
  discardResponseBodies: false,
  noConnectionReuse: false,
  batchPerHost: 1000,
  insecureSkipTLSVerify: true,
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<200'],
  },
  scenarios: {
    default: {
      executor: 'ramping-vus',
      startVUs: 1,
      stages: [
        { duration: '1s', target: 5 },
        { duration: '1s', target: 15 },
        { duration: '1s', target: 25 },
        { duration: '3s', target: 25 },
        { duration: '1s', target: 0 },
      ],
    },
  },
};

export default function () {
  const res = http.get(TARGET);
  check(res, { 'status is 200': (r) => r.status === 200 });
}
