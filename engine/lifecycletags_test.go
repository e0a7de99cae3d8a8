package engine

import "testing"

// Setup and teardown samples carry the test-wide tags (options.tags and
// --tag), as k6 tags every sample of a run with them: a dashboard filtering
// on testid sees the seed's operations too.
func TestSetupAndTeardownSamplesCarryTestWideTags(t *testing.T) {
	res, _, errs := runScript(t, `
import { Counter } from "k6/metrics";
const c = new Counter("lifecycle_ops");
export const options = { iterations: 1, tags: { testid: "t1" },
  thresholds: { "lifecycle_ops{testid:t1}": ["count==3"], "lifecycle_ops{group:::setup}": ["count==1"] } };
export function setup() { c.add(1); }
export default function () { c.add(1); }
export function teardown() { c.add(1); }`, nil, nil)
	if res.ExitCode != ExitOK {
		t.Fatalf("exit %d (%v): %s", res.ExitCode, res.Err, errs)
	}
}
