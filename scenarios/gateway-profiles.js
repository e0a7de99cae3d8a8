// The gateway load profiles (buzzload/profiles.js, from the gateway seed's
// LOAD-PROFILES.md) against Buzz HTTP: each iteration is one signed /query
// read of a channel's newest 50 messages (http_query) or one /events post
// (http_events), as the next of gateway-profiles.toml's agents in turn,
// through the low-level API. The profile's thresholds judge every Buzz
// operation of its scenario; after a paced profile the summary says
// whether the run is valid as an absolute-rate claim (achieved >= 99 % of
// the scheduled arrivals).
//
//   buzzload run -e PROFILE=p1c-paced scenarios/gateway-profiles.js
//   buzzload run -e PROFILE=p3-ramp -e SCALE=0.1 -e OP=mix scenarios/gateway-profiles.js
//
// PROFILE: p1-baseline, p2-sustained, p3-ramp, p4-stress or a paced twin
// (p1c-paced ... p4c-paced; default p1c-paced). SCALE shortens the
// durations (CI), LOAD scales VUs and rates. OP: query (default), events,
// or mix (every tenth iteration posts). The embedded relay applies Buzz's
// quotas, so above them requests are throttled (not errors): run with
// BUZZ_RATE_LIMIT=false to measure the relay rather than its quotas. The
// profile's thresholds leave out its first 10 s (scaled with SCALE; the
// seed's warm-up) through P.judged; WARMUP=0 judges everything.
import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { profile, pacedVerdict } from "buzzload/profiles.js";

const sc = buzz.load("./gateway-profiles.toml");
const OP = __ENV.OP || "query";
if (!["query", "events", "mix"].includes(OP)) {
  throw new Error("OP=" + OP + ": want query, events or mix");
}
const NAME = __ENV.PROFILE || "p1c-paced";
const P = profile(NAME, {
  exec: "op",
  scale: Number(__ENV.SCALE || 1),
  load: Number(__ENV.LOAD || 1),
  warmup: __ENV.WARMUP === undefined ? undefined : Number(__ENV.WARMUP),
  duration: "buzz_op_duration{scenario:" + NAME + "}",
  failed: "buzz_op_failed{scenario:" + NAME + "}",
});
const AGENTS = sc.peak().agent;

export const options = {
  scenarios: { [P.name]: P.scenario },
  thresholds: P.thresholds,
  summaryTrendStats: ["avg", "min", "med", "max", "p(95)", "p(99)"],
  setupTimeout: "10m",
};

export function setup() {
  sc.setup();
  const channels = [];
  for (let i = 0; i < 4; i++) channels.push(sc.channelId(0, i));
  return { channels: channels };
}

export const op = P.judged(function (data) {
  const n = exec.scenario.iterationInTest;
  const h = sc.http("agent", n % AGENTS);
  const ch = data.channels[n % data.channels.length];
  if (OP === "events" || (OP === "mix" && n % 10 === 0)) {
    h.events({ kind: 9, content: "profile " + NAME + " " + n, tags: [["h", ch]] });
  } else {
    h.query([{ kinds: [9], "#h": [ch], limit: 50 }]);
  }
});

export function teardown() {
  sc.teardown();
}

export function handleSummary(data) {
  // The profile's verdict goes into the Buzz report (its checks, the JSON
  // and HTML reports); FAIL_INVALID=1 makes an invalid claim fail the run.
  const v = Object.assign(pacedVerdict(data, P), { failInvalid: __ENV.FAIL_INVALID === "1" });
  const out = sc.report(data, { json: __ENV.BUZZ_REPORT || "", profile: v });
  out.stdout = (out.stdout || "") + v.text + "\n";
  return out;
}
