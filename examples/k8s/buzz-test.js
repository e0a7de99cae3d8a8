// The k6-operator example's script (testrun.yaml): local-smoke.js against a
// real Buzz deployment named in buzz-test.toml. Every runner runs setup(),
// as k6-operator's open-source mode does (k6-operator#223): sc.setup()
// seeds only on the runner whose execution segment starts at 0 and makes
// the others wait until the fixture is complete (examples/distributed.md
// "Seed once"). handleSummary keeps each runner's Buzz report in its log;
// the whole run's verdict is the merge Job's.
import buzz from "k6/x/buzz";

const sc = buzz.load("./buzz-test.toml");

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
  return sc.report(data, { json: "" });
}
