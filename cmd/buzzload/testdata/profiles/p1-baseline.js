// Gateway profile p1 (../shared/seeds/gateway-LOAD-PROFILES.md), a plain k6
// script, shortened for tests: 60s -> 3s. Constant low load, error budget
// zero. TARGET (default $BASE/echo) is the gateway URL.
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
      executor: 'constant-vus',
      vus: 10,
      duration: '3s',
    },
  },
};

export default function () {
  const res = http.get(TARGET);
  check(res, { 'status is 200': (r) => r.status === 200 });
}
