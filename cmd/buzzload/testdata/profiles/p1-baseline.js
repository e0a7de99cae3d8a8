// Gateway profile p1 (../shared/seeds/gateway-LOAD-PROFILES.md), a plain k6
// script, shortened for tests: 60s -> 3s. Constant low load, error budget
// zero.
import { base, hit } from './base.js';

export const options = Object.assign({}, base, {
  scenarios: {
    default: {
      executor: 'constant-vus',
      vus: 10,
      duration: '3s',
    },
  },
});

export default function () {
  hit('status is 200', [200]);
}
