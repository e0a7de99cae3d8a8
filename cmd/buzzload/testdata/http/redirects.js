// Each redirect hop is its own request with its own samples; maxRedirects and
// params.redirects stop early (returning the redirect, with a warning).
// args: -i 1
// exit: 0
// stderr: Stopped after 1 redirects and returned the redirection
import http from "k6/http";
import { check } from "k6";

export const options = {
  maxRedirects: 3,
  thresholds: {
    checks: ["rate==1"],
    "http_reqs{status:302}": ["count==5"],
    "http_reqs{status:200}": ["count==1"],
    "http_reqs{status:303}": ["count==1"],
    http_reqs: ["count==7"],
    "http_reqs{name:hop}": ["count==4"],
  },
};

export default function () {
  const B = __ENV.BASE;
  const r = http.get(`${B}/redirect/3`, { tags: { name: "hop" } });
  check(r, {
    "followed to the end": (r) => r.status === 200 && r.body === "landed" && r.url === `${B}/redirect/0`,
  });
  const stop = http.get(`${B}/redirect/5`, { redirects: 1 });
  check(stop, { "stopped with the redirect": (r) => r.status === 302 && r.url === `${B}/redirect/4` });
  const none = http.get(`${B}/redirect-to?url=/echo&status=303`, { redirects: 0 });
  check(none, { "zero redirects": (r) => r.status === 303 && r.headers["Location"] === "/echo" });
}
