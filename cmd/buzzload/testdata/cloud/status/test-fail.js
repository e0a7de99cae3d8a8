import exec from 'k6/execution';
export const options = { vus: 1, iterations: 1, thresholds: { iterations: ['count>5'] } };
export default function () { exec.test.fail('marked'); }
