// The gateway load profiles (../shared/seeds/gateway-LOAD-PROFILES.md) as
// k6 scenarios and thresholds: four closed-loop profiles (constant-vus,
// ramping-vus) for relative ranking and their paced twins
// (constant-arrival-rate, ramping-arrival-rate) for absolute-rate claims.
//
//   import { profile, pacedVerdict } from "buzzload/profiles.js";
//   const p = profile("p1c-paced", { exec: "read", scale: 0.05,
//     duration: "buzz_op_duration{op:query}", failed: "buzz_op_failed{op:query}" });
//   export const options = { scenarios: { [p.name]: p.scenario }, thresholds: p.thresholds };
//   export const read = p.judged(function () { ... });
//
// Warm-up: the seed excludes "the first 10 seconds of every run" from the
// metrics. k6 has no time filter on thresholds, so p.judged(fn) tags the
// VU's samples phase=warmup for the profile's first warmup seconds (from
// the scenario's start) and phase=judged after (exec.vu.metrics.tags, which
// k6/http and the Buzz metrics carry alike), and the latency and failure
// thresholds judge {phase:judged} only. iterations{phase:judged} count>0
// fails a run that judged nothing (an exec not wrapped in p.judged, or a
// run no longer than its warm-up). dropped_iterations carries no VU tags:
// a drop in the warm-up still counts.
//
// Stages, VUs, rates and durations are the seed's. Where it gives none we
// chose: p3c-paced's stages mirror p3-ramp's (60 s to each rate, 180 s
// hold, 60 s down: the 420 s written), and the paced profiles' VU pools
// (preAllocatedVUs, maxVUs; p4c's 5 000 is written).

import exec from "k6/execution";

// The closed-loop profiles. p95 is the http_req_duration p(95) cutoff in ms
// (p4 has none); strict profiles keep the failure rate under 1 %.
const CLOSED = {
  "p1-baseline": { vus: 10, seconds: 60, p95: 200, strict: true },
  "p2-sustained": { vus: 100, seconds: 300, p95: 300, strict: true },
  "p3-ramp": {
    startVUs: 10,
    stages: [
      [60, 100],
      [60, 300],
      [60, 500],
      [180, 500],
      [60, 0],
    ],
    p95: 500,
    strict: true,
  },
  "p4-stress": { vus: 1000, seconds: 120, p95: null, strict: false },
};

// The paced twins: arrivals per second on a wall-clock cadence. dropped is
// the red signal as the seed means it, a share of the scheduled arrivals
// that may be dropped (p1c none, p2c/p3c 1 %), written as a count
// threshold: k6's rate on dropped_iterations (a Counter) is per second, so
// "rate<0.01" failed a full p2c on its third drop. p4c lets drops float;
// a shortfall over flag (5 %) is flagged in its verdict.
const PACED = {
  "p1c-paced": { twin: "p1-baseline", rate: 500, seconds: 60, pre: 50, max: 500, dropped: 0 },
  "p2c-paced": { twin: "p2-sustained", rate: 2000, seconds: 300, pre: 200, max: 2000, dropped: 0.01 },
  "p3c-paced": {
    twin: "p3-ramp",
    startRate: 500,
    stages: [
      [60, 2000],
      [60, 5000],
      [60, 10000],
      [180, 10000],
      [60, 0],
    ],
    pre: 500,
    max: 5000,
    dropped: 0.01,
  },
  "p4c-paced": { twin: "p4-stress", rate: 20000, seconds: 120, pre: 1000, max: 5000, dropped: null, flag: 0.05 },
};

// PACED_BUDGET widens a paced profile's p95 cutoff over its twin's: arrivals
// keep coming while a slow target queues, so each request also measures
// its wait.
export const PACED_BUDGET = 1.5;

// VALID_SHARE is the red-signal rule: a paced run is valid as an
// absolute-rate claim only when it achieved 99 % of its scheduled arrivals.
export const VALID_SHARE = 0.99;

// WARMUP is the seed's warm-up in seconds, scaled like every duration.
export const WARMUP = 10;

// The profile names, closed-loop first.
export const PROFILES = Object.keys(CLOSED).concat(Object.keys(PACED));

function scaled(seconds, scale) {
  return Math.max(1, Math.round(seconds * scale));
}

// stagesOf is k6 stages from [seconds, target] pairs, durations scaled and
// non-zero targets loaded by n.
function stagesOf(list, scale, n) {
  return list.map(([s, target]) => ({ duration: scaled(s, scale) + "s", target: target && n(target) }));
}

// profile(name, opts) returns { name, paced, scenario, thresholds,
// scheduled, seconds }: the k6 scenario of the profile and its thresholds on
// the metrics it judges. opts:
//   exec      the exported function each iteration runs (default "default")
//   duration  the latency Trend judged by p(95) (default http_req_duration)
//   failed    the failure Rate (default http_req_failed)
//   scale     shortens every duration for CI (0.05: p1's 60 s become 3 s)
//   load      scales VUs and rates alike (default 1: as written)
//   warmup    seconds left out of the judged metrics (default WARMUP,
//             scaled; 0: judge everything, no tag)
// scheduled is a paced profile's scheduled arrivals (0 for closed-loop);
// warmup the warm-up in seconds; judged(fn) the exec function to export.
export function profile(name, opts) {
  const o = Object.assign({ exec: "default", duration: "http_req_duration", failed: "http_req_failed", scale: 1, load: 1, warmup: WARMUP }, opts || {});
  if (!(o.scale > 0) || !(o.load > 0)) {
    throw new Error("profile(" + name + "): scale and load must be positive numbers");
  }
  if (o.warmup === undefined) {
    o.warmup = WARMUP;
  }
  if (!(o.warmup >= 0)) {
    throw new Error("profile(" + name + "): warmup must be a number of seconds, 0 or more");
  }
  const warmup = o.warmup > 0 ? scaled(o.warmup, o.scale) : 0;
  const judge = (metric) => (warmup > 0 ? withTag(metric, "phase:judged") : metric);
  const n = (v) => Math.max(1, Math.round(v * o.load));
  const c = CLOSED[name];
  const p = PACED[name];
  if (!c && !p) {
    throw new Error("profile(" + name + "): unknown profile; want one of " + PROFILES.join(", "));
  }
  const base = c || CLOSED[p.twin];
  const thresholds = {};
  if (base.p95 !== null) {
    const cutoff = p ? base.p95 * PACED_BUDGET : base.p95;
    thresholds[judge(o.duration)] = ["p(95)<" + cutoff];
  }
  if (base.strict) {
    thresholds[judge(o.failed)] = ["rate<0.01"];
  }
  if (warmup > 0) {
    thresholds["iterations{phase:judged}"] = ["count>0"];
  }
  let scenario;
  let scheduled = 0;
  let seconds = 0;
  if (c) {
    if (c.stages) {
      scenario = { executor: "ramping-vus", startVUs: n(c.startVUs), stages: stagesOf(c.stages, o.scale, n), exec: o.exec };
      seconds = c.stages.reduce((t, [s]) => t + scaled(s, o.scale), 0);
    } else {
      seconds = scaled(c.seconds, o.scale);
      scenario = { executor: "constant-vus", vus: n(c.vus), duration: seconds + "s", exec: o.exec };
    }
  } else {
    const pool = { preAllocatedVUs: n(p.pre), maxVUs: n(p.max) };
    if (p.stages) {
      const st = stagesOf(p.stages, o.scale, n);
      scenario = Object.assign({ executor: "ramping-arrival-rate", startRate: n(p.startRate), timeUnit: "1s", stages: st, exec: o.exec }, pool);
      let from = n(p.startRate);
      for (const s of st) {
        const d = parseInt(s.duration, 10);
        scheduled += ((from + s.target) / 2) * d;
        seconds += d;
        from = s.target;
      }
    } else {
      seconds = scaled(p.seconds, o.scale);
      scenario = Object.assign({ executor: "constant-arrival-rate", rate: n(p.rate), timeUnit: "1s", duration: seconds + "s", exec: o.exec }, pool);
      scheduled = n(p.rate) * seconds;
    }
    if (p.dropped === 0) {
      thresholds["dropped_iterations{scenario:" + name + "}"] = ["count==0"];
    } else if (p.dropped) {
      thresholds["dropped_iterations{scenario:" + name + "}"] = ["count<=" + Math.floor(p.dropped * Math.round(scheduled))];
    }
    // Exposes the scenario's achieved iterations to handleSummary
    // (pacedVerdict); it always holds.
    thresholds["iterations{scenario:" + name + "}"] = ["count>=0"];
  }
  return { name: name, paced: !!p, scenario: scenario, thresholds: thresholds, scheduled: Math.round(scheduled), seconds: seconds,
    dropShare: p ? p.dropped : null, flagShare: p && p.flag ? p.flag : null, warmup: warmup, judged: (fn) => judged(fn, warmup) };
}

// withTag adds tag ("key:value") to a threshold's metric selector.
function withTag(metric, tag) {
  return metric.endsWith("}") ? metric.slice(0, -1) + "," + tag + "}" : metric + "{" + tag + "}";
}

// judged(fn, warmup) is fn with the VU's later samples tagged phase=warmup
// while the scenario is in its first warmup seconds, phase=judged after.
function judged(fn, warmup) {
  if (typeof fn !== "function") {
    throw new Error("judged(fn): fn must be the exec function");
  }
  if (warmup <= 0) {
    return fn;
  }
  const ms = warmup * 1000;
  return function () {
    exec.vu.metrics.tags.phase = Date.now() - exec.scenario.startTime < ms ? "warmup" : "judged";
    return fn.apply(this, arguments);
  };
}

// pacedVerdict(data, p) reads handleSummary's data after a paced run and
// says whether it is valid as an absolute-rate claim: achieved (the
// scenario's iterations) at least 99 % of the scheduled arrivals. Returns
// { valid, achieved, scheduled, text }; closed-loop profiles make no claim.
export function pacedVerdict(data, p) {
  if (!p.paced) {
    return { name: p.name, paced: false, valid: null, achieved: 0, scheduled: 0, text: "  profile " + p.name + ": closed-loop, ranks targets; no absolute-rate claim\n" };
  }
  const m = (data.metrics || {})["iterations{scenario:" + p.name + "}"];
  const achieved = m && m.values ? m.values.count || 0 : 0;
  const share = p.scheduled > 0 ? achieved / p.scheduled : 0;
  const valid = share >= VALID_SHARE;
  const pct = (100 * share).toFixed(2);
  const flagged = p.flagShare !== null && p.flagShare !== undefined && 1 - share > p.flagShare;
  const text =
    "  profile " + p.name + ": achieved " + achieved + " of " + p.scheduled + " scheduled arrivals (" + pct + " %): " +
    (valid ? "valid as an absolute-rate claim\n" : "NOT valid as an absolute-rate claim (below 99 % of the scheduled arrivals)\n") +
    (flagged ? "  ! profile " + p.name + ": shortfall " + (100 * (1 - share)).toFixed(2) + " % of the scheduled arrivals, over " + 100 * p.flagShare + " %\n" : "");
  return { name: p.name, paced: true, valid: valid, achieved: achieved, scheduled: p.scheduled, flagged: flagged, text: text };
}
