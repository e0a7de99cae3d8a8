// Ramp helpers: build k6 `stages` arrays.

// rampStages returns stages that ramp linearly from 0 to `peak` over `up`,
// hold for `hold`, then ramp down to 0 over `down` (durations in k6 syntax,
// e.g. "30s"). A zero or missing duration leaves that stage out.
export function rampStages(peak, up, hold, down) {
  if (!(peak > 0)) {
    throw new Error("rampStages: peak must be a positive number, got " + peak);
  }
  const stages = [];
  if (up) stages.push({ duration: up, target: peak });
  if (hold) stages.push({ duration: hold, target: peak });
  if (down) stages.push({ duration: down, target: 0 });
  return stages;
}

// stepStages climbs to `peak` in `steps` equal steps, each reached at once
// (a zero-duration stage) and held for `hold`. Both stages of step i are named
// "step-<i>" (from 0), so a `window: "stage"` threshold judges each step as one
// window, jump and hold together.
export function stepStages(peak, steps, hold) {
  if (!(steps >= 1)) {
    throw new Error("stepStages: steps must be at least 1, got " + steps);
  }
  const stages = [];
  for (let i = 1; i <= steps; i++) {
    const target = Math.round((peak * i) / steps);
    const name = "step-" + (i - 1);
    stages.push({ duration: "0s", target: target, name: name });
    stages.push({ duration: hold, target: target, name: name });
  }
  return stages;
}
