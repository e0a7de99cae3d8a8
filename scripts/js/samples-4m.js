// 20,000 iterations × 200 samples = 4,000,000 tagged samples (80 series):
// the sample path's CPU (scripts/cloud-cpu.sh, scripts/k6-side-by-side.sh).
import { Trend, Counter } from 'k6/metrics';
const t = new Trend('bench_trend');
const c = new Counter('bench_count');
const tags = [...Array(40)].map((_, i) => ({ op: 'op' + i, community: 'c' + (i % 2) }));
export const options = { scenarios: { s: { executor: 'shared-iterations', vus: 4, iterations: 20000, maxDuration: '10m' } } };
export default function () {
  for (let i = 0; i < 100; i++) {
    t.add(i, tags[i % 40]);
    c.add(1, tags[i % 40]);
  }
}
