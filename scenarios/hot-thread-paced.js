// The hot thread, paced: replies arrive at a constant rate whatever the relay
// does (an open model: constant-arrival-rate drops starts it cannot make
// instead of slowing down), posted through the low-level API as the
// scenario's hot-thread authors in turn, while the humans of
// hot-thread-paced.toml watch the channel and record delivery.
//
//   buzzload run scenarios/hot-thread-paced.js
//   buzzload run -e RATE=20 -e READS=2 scenarios/hot-thread-paced.js
//
// DURATION (default 60s) should match the TOML's ramp, whose steps tag the
// samples.
import buzz from "k6/x/buzz";
import exec from "k6/execution";

const sc = buzz.load("./hot-thread-paced.toml");
// Buzz allows a human 60 messages a minute: with 5 authors in turn, rates
// above 5/s show up as throttled hot_reply (quota rejections, not errors).
const RATE = Number(__ENV.RATE || 3); // replies per second
const READS = Number(__ENV.READS || 1); // thread reads per second
const DURATION = __ENV.DURATION || "60s";
const AUTHORS = sc.peak().hot_author; // hot-thread authors at the largest step

// The humans' ramping-vus scenario and its abort thresholds come from the
// scenario file; the paced scenarios run beside it for the same minute.
const base = sc.options({ scenarios: { hot_authors: null } });
const paced = sc.thresholds(["hot_reply", "thread_fetch"], "10s");

export const options = {
  scenarios: {
    humans: base.scenarios.humans,
    hot_replies: {
      executor: "constant-arrival-rate",
      rate: RATE,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: 5,
      maxVUs: 50,
      gracefulStop: "15s",
      exec: "reply",
    },
    thread_reads: {
      executor: "constant-arrival-rate",
      rate: READS,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: 2,
      maxVUs: 10,
      gracefulStop: "15s",
      exec: "read",
    },
  },
  thresholds: Object.assign({}, base.thresholds, paced),
  summaryTrendStats: base.summaryTrendStats,
};

export function setup() {
  const seeded = sc.setup();
  return { root: sc.hotRoot(), channel: sc.channelId(0, 0), seeded: seeded };
}

export function human() {
  sc.human();
}

// One timed reply under the hot root, by the next author in turn.
export function reply(data) {
  const n = exec.scenario.iterationInTest;
  const author = sc.http("hot_author", n % AUTHORS);
  author.events(
    {
      kind: 9,
      content: "paced reply " + n,
      tags: [
        ["h", data.channel],
        ["e", data.root, "", "reply"],
      ],
      timed: true,
    },
    { op: "hot_reply" },
  );
}

// The newest 100 replies of the thread, as an author reads it.
export function read(data) {
  const reader = sc.http("hot_author", exec.scenario.iterationInTest % AUTHORS);
  reader.query([{ kinds: [9], "#e": [data.root], limit: 100 }], { op: "thread_fetch" });
}

export function teardown() {
  sc.teardown();
}

export function handleSummary(data) {
  return sc.report(data, { json: __ENV.BUZZ_REPORT || "buzz-report.json" });
}
