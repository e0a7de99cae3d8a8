// The cloud output's probe: metrics whose every value the script fixes, run
// by real k6 v1.8.1 and by buzzload against a capture server (cloud_test.go).
// k6's pushes are kept in k6-push-*.bin, its create and finish bodies in
// k6-create.json and k6-finish.json.
import { Counter, Trend, Rate, Gauge } from 'k6/metrics';
import { check, group } from 'k6';

const c = new Counter('probe_counter');
const t = new Trend('probe_trend', true);
const plain = new Trend('probe_plain');
const r = new Rate('probe_rate');
const g = new Gauge('probe_gauge');

export const options = {
  scenarios: { probe: { executor: 'per-vu-iterations', vus: 2, iterations: 3, maxDuration: '20s' } },
  thresholds: { probe_trend: ['p(95)<1000', 'max<2e9'], 'probe_counter{kind:a}': ['count>1'], checks: ['rate>0.4'] },
  cloud: { name: 'cloud probe', projectID: 77 },
};

export default function () {
  c.add(2.5, { kind: 'a' });
  c.add(1);
  // Log-spaced values over 12 decades cover every bucket regime of the
  // histogram (linear below 256 µs, log-linear above), plus 0 and negatives.
  for (let i = -60; i <= 140; i++) {
    t.add(Math.pow(10, i / 20));
  }
  t.add(0);
  t.add(-3);
  t.add(255.9);
  plain.add(42, { weird: 'a b=c' });
  r.add(true);
  r.add(false);
  r.add(1);
  g.add(5);
  g.add(-2);
  g.add(7);
  group('grp', function () {
    check(1, { 'one is one': (v) => v === 1, 'one is two': (v) => v === 2 });
  });
}
