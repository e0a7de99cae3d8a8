// Gateway profile p3 (../shared/seeds/gateway-LOAD-PROFILES.md), a plain k6
// script, shortened for tests: each 60s stage -> 1s (180s hold -> 3s) and
// the VU targets divided by 20 (10 -> 100 -> 300 -> 500 -> 0 becomes
// 1 -> 5 -> 15 -> 25 -> 0) so it fits a 2-core CI box.
import { base, hit } from './base.js';

export const options = Object.assign({}, base, {
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
});

export default function () {
  hit('status is 200', [200]);
}
