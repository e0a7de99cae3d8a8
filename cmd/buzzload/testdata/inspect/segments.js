// Three segments of mixed scenarios, one with no work at all: k6 v2.2.0's
// totalDuration is the last change of the summed VUs (segments-*.json).
export const options = { executionSegment: 'SEG', executionSegmentSequence: '0,1/3,2/3,1',
  scenarios: { a: { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: '10s', startTime: '5s' },
               b: { executor: 'ramping-arrival-rate', startRate: 1, stages: [{duration: '4s', target: 3}], preAllocatedVUs: 1, maxVUs: 2, startTime: '1s' },
               c: { executor: 'constant-vus', vus: 2, duration: '3s', startTime: '7s', gracefulStop: '0s' } } };
export default function () {}
