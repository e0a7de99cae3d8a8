// The script the operator test distributes: deterministic, so three
// runners of one third each do exactly what one instance does. setup()
// seeds the Buzz fixture (once: the runner whose segment starts at 0 seeds,
// the others wait for it); each of the 30 shared iterations posts one
// message as one of the humans and reads it back.
import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { check } from "k6";

const sc = buzz.load("./distributed.toml");
const HUMANS = sc.peak().human;

export const options = {
  scenarios: {
    probe: { executor: "shared-iterations", vus: 3, iterations: 30, maxDuration: "60s" },
  },
  // Judged on the whole: one runner's 10 iterations fail the first, the
  // merge of the three passes it.
  thresholds: {
    iterations: ["count>=30"],
    checks: ["rate==1"],
  },
  setupTimeout: "60s",
};

export function setup() {
  return { channel: sc.channelId(0, 0), seeded: sc.setup(), label: __ENV.RUN_LABEL || "" };
}

export default function (data) {
  const n = exec.scenario.iterationInTest;
  const h = sc.http("human", n % HUMANS);
  const post = h.events({ kind: 9, content: "probe " + n, tags: [["h", data.channel]] }, { op: "probe_post" });
  const back = h.query([{ ids: [post.id] }], { op: "probe_read" });
  check(null, {
    "post accepted": () => post.ok,
    "post readable": () => back.ok && back.events.length === 1,
    "label from -e": () => data.label === "operator",
  });
}
