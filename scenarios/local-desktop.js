// The desktop app's legacy and current modes on local-desktop.toml: seeds the
// scenario, runs 18 desktop clients (and 6 basic humans) for a minute and
// prints a per-operation report. DESKTOP_MODE (legacy or current) picks the
// mode; unset keeps the TOML's. With no [target] in the TOML the embedded
// relay serves the run. scripts/desktop-compare.sh runs both modes and
// compares them.
//
//   buzzload run -e DESKTOP_MODE=legacy scenarios/local-desktop.js
//   buzzload run -e DESKTOP_MODE=current --result current.json scenarios/local-desktop.js
//   buzzload run -e DESKTOP_MODE=legacy -e BUZZ_REPORT=legacy-report.json scenarios/local-desktop.js
import buzz from "k6/x/buzz";

const sc = buzz.load('./local-desktop.toml', { desktopMode: __ENV.DESKTOP_MODE });

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
