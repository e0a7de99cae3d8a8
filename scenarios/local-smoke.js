// Smoke run of local-smoke.toml: seeds the scenario, then ramps humans and
// agents through its two steps (45 s) and prints a per-operation report.
// With no [target] in the TOML the embedded relay serves the run.
//
//   buzzload run scenarios/local-smoke.js
//   buzzload run --shard 0/2 scenarios/local-smoke.js   # one of two shards
//   buzzload run --report out.json scenarios/local-smoke.js
import buzz from "k6/x/buzz";

const sc = buzz.load("./local-smoke.toml");

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
