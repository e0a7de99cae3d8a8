// -d over a script's own duration replaces it without k6's "overrode
// scenarios" warning: k6 warns only when the script defined scenarios.
// args: -d 1s
// exit: 0
// !stderr: overrode scenarios configuration
export const options = { duration: "30s", vus: 1 };
export default function () {}
