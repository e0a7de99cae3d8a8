// A custom script on the low-level API of k6/x/buzz: each iteration, one of
// the scenario's humans connects (recorded as connect and auth), reads a
// channel up to EOSE, posts a message, disconnects and reads the message back
// over HTTP. Each call is recorded under the op name given here, so the report
// and the thresholds see "greet_*" operations beside the built-in ones.
//
//   buzzload run examples/custom-lowlevel.js
import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { check, sleep } from "k6";

const sc = buzz.load("./custom-lowlevel.toml");
const HUMANS = sc.peak().human;

export const options = {
  scenarios: {
    greeters: {
      executor: "constant-vus",
      vus: 2,
      duration: __ENV.DURATION || "20s",
      gracefulStop: "15s",
      exec: "greet",
    },
  },
  // The scenario's limits, as whole-run thresholds on these ops.
  thresholds: sc.thresholds(["connect", "auth", "greet_read", "greet_post", "greet_check"], "5s"),
};

export function setup() {
  return { channel: sc.channelId(0, 0), seeded: sc.setup() };
}

export function greet(data) {
  const who = exec.scenario.iterationInTest % HUMANS;
  const s = sc.connect("human", who);
  if (!check(s, { connected: (x) => x.ok })) {
    sleep(1); // back off as the built-in clients do: no reconnect storm on a restarting relay
    return;
  }
  const read = s.subscribeUntilEose([{ kinds: [9], "#h": [data.channel], limit: 20 }], { op: "greet_read" });
  const post = s.publish(
    { kind: 9, content: "hello from human " + who, tags: [["h", data.channel]] },
    { op: "greet_post" },
  );
  s.close();
  const back = sc.http("human", who).query([{ ids: [post.id] }], { op: "greet_check" });
  check(null, {
    "read reached EOSE": () => read.ok,
    "post accepted": () => post.ok,
    "post readable": () => back.ok && back.events.length === 1,
  });
  sleep(1);
}

export function teardown() {
  sc.teardown();
}

export function handleSummary(data) {
  return sc.report(data, { json: __ENV.BUZZ_REPORT || "" });
}
