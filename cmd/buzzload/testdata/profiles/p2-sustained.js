// Gateway profile p2 (../shared/seeds/gateway-LOAD-PROFILES.md), a plain k6
// script, shortened for tests: 300s -> 3s and 100 VUs -> 20 (a 2-core CI
// box). Constant moderate load, error budget zero.
import { base, hit } from './base.js';

export const options = Object.assign({}, base, {
  scenarios: {
    default: {
      executor: 'constant-vus',
      vus: 20,
      duration: '3s',
    },
  },
});

export default function () {
  hit('status is 200', [200]);
}
