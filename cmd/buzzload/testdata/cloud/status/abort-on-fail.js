import { Counter } from 'k6/metrics';
const c = new Counter('ab');
export const options = { vus: 1, duration: '10s', thresholds: { ab: [{ threshold: 'count<3', abortOnFail: true }] } };
export default function () { c.add(1); }
