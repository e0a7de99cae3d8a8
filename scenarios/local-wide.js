// Large-deployment shape in miniature (local-wide.toml): private channels with
// wide channels, uneven membership (tiers), agents working in turns and the
// hot thread; three steps (220 s), then a per-operation report.
// A quarter of the humans run the desktop-app model (current mode). With no
// [target] in the TOML the embedded relay serves the run.
//
//   buzzload run scenarios/local-wide.js
//   buzzload run --shard 0/2 scenarios/local-wide.js   # one of two shards
//   buzzload run -e BUZZ_REPORT=out.json scenarios/local-wide.js
import buzz from "k6/x/buzz";

const sc = buzz.load("./local-wide.toml");

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
