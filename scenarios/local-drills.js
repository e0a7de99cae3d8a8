// Smoke run of local-drills.toml: seeds the scenario, then ramps humans and
// agents through its two steps (45 s) and prints a per-operation report.
// With no [target] in the TOML the embedded relay serves the run.
//
//   buzzload run scenarios/local-drills.js
//   buzzload run --shard 0/2 scenarios/local-drills.js   # one of two shards
//   buzzload run --report out.json scenarios/local-drills.js
import buzz from "k6/x/buzz";

const sc = buzz.load("./local-drills.toml");

export const options = sc.options();

export function setup() {
  return sc.setup();
}

export function human() {
  sc.human();
}

export function desktop() {
  sc.desktop();
}

export function agent() {
  sc.agent();
}

export function hotAuthor() {
  sc.hotAuthor();
}

export function teardown() {
  sc.teardown();
}

export function handleSummary(data) {
  return sc.report(data, { json: __ENV.BUZZ_REPORT || "buzz-report.json" });
}
