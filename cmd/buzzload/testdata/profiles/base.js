// The base every gateway profile inherits (../shared/seeds/
// gateway-LOAD-PROFILES.md "Common settings"), imported by relative path as
// the gateway's own k6 scripts share it. TARGET (default $BASE/echo) is the
// gateway URL.
import http from 'k6/http';
import { check } from 'k6';

const TARGET = __ENV.TARGET || `${__ENV.BASE}/echo`;

export const base = {
  discardResponseBodies: false,
  noConnectionReuse: false,
  batchPerHost: 1000,
  insecureSkipTLSVerify: true,
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<200'],
  },
};

// hit requests TARGET once and checks its status is one of ok.
export function hit(name, ok) {
  const res = http.get(TARGET);
  check(res, { [name]: (r) => ok.includes(r.status) });
}
