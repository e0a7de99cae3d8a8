// Checks in setup are tagged group=::setup and appear under a "setup" group.
// exit: 0
// stdout: groups=setup checks=in setup
import { check } from "k6";
export function setup() { check(1, { "in setup": () => true }); }
export default function () {}
export function handleSummary(data) {
  const g = data.root_group.groups[0];
  return { stdout: "groups=" + g.name + " checks=" + g.checks[0].name };
}
