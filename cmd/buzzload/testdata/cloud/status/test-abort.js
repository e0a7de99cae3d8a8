import exec from 'k6/execution';
export const options = { vus: 1, iterations: 5 };
export default function () { exec.test.abort('stop'); }
