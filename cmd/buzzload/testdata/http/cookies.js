// The VU cookie jar keeps server cookies within an iteration and is reset
// between iterations; params.cookies adds request cookies (replace wins over
// the jar); CookieJar set/cookiesForURL/delete/clear; Response.cookies.
// args: -i 2
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"] } };
export default function () {
  const B = __ENV.BASE;
  const before = http.get(`${B}/cookies`).json();
  check(before, { "jar empty at iteration start": (c) => Object.keys(c).length === 0 });
  const s = http.get(`${B}/cookies/set?a=1&b=2`);
  check(s, { "response cookies": (r) => r.cookies.a[0].value === "1" && r.cookies.b[0].path === "/" });
  check(http.get(`${B}/cookies`).json(), { "jar sends them": (c) => c.a === "1" && c.b === "2" });
  const r = http.get(`${B}/cookies`, { cookies: { a: { value: "9", replace: true }, c: "3" } });
  check(r.json(), { "request cookies": (c) => c.a === "9" && c.c === "3" && c.b === "2" });
  const jar = http.cookieJar();
  check(jar.cookiesForURL(B), { "cookiesForURL": (c) => c.a[0] === "1" });
  jar.set(B, "z", "26");
  check(http.get(`${B}/cookies`).json(), { "jar.set": (c) => c.z === "26" });
  jar.delete(B, "z");
  check(jar.cookiesForURL(B), { "jar.delete": (c) => c.z === undefined && c.a[0] === "1" });
  jar.clear(B);
  check(jar.cookiesForURL(B), { "jar.clear": (c) => Object.keys(c).length === 0 });
  const own = new http.CookieJar();
  own.set(B, "own", "yes");
  check(http.get(`${B}/cookies`, { jar: own }).json(), { "params.jar": (c) => c.own === "yes" && c.a === undefined });
  http.get(`${B}/cookies/set?a=1`);
}
