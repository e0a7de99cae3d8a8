// Threshold helpers for the Buzz metrics (buzz_op_duration, buzz_op_failed).

// opThresholds returns a k6 `thresholds` object with one latency and one
// failure-rate threshold per operation name, e.g.
//   opThresholds(["publish", "subscribe_eose"], { p95: 500, failRate: 0.01 })
// gives { "buzz_op_duration{op:publish}": ["p(95)<500"],
//         "buzz_op_failed{op:publish}": ["rate<0.01"], ... }.
// With abortOnFail the failure-rate thresholds stop the run when crossed.
export function opThresholds(ops, opts) {
  const o = Object.assign({ p95: 1000, failRate: 0.01, abortOnFail: false }, opts || {});
  const out = {};
  for (const op of ops) {
    out["buzz_op_duration{op:" + op + "}"] = ["p(95)<" + o.p95];
    const rate = "rate<" + o.failRate;
    out["buzz_op_failed{op:" + op + "}"] = o.abortOnFail
      ? [{ threshold: rate, abortOnFail: true }]
      : [rate];
  }
  return out;
}
