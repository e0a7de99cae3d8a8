// Big bodies arrive whole and count in data_received; gzip bodies are
// decoded; compression compresses the request body; http.file makes a
// multipart body; basic and digest auth.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"], data_received: ["count>5000000"] } };
export default function () {
  const B = __ENV.BASE;
  const big = http.get(`${B}/bytes/5000000`);
  check(big, { "5 MB body": (r) => r.body.length === 5000000 && r.timings.receiving > 0 });
  check(http.get(`${B}/gzip`), { "gzip decoded": (r) => r.json("items.#") === 2 && r.json().gzipped === true });
  const z = http.post(`${B}/echo`, "hello hello hello", { compression: "gzip" });
  check(z.json(), { "compressed upload": (e) => e.headers["Content-Encoding"] === "gzip" && e.body !== "hello hello hello" });
  const m = http.post(`${B}/echo`, { field: "v", upload: http.file("file-content", "a.txt", "text/plain") });
  check(m.json(), {
    "multipart": (e) => e.headers["Content-Type"].startsWith("multipart/form-data; boundary=") &&
      e.body.includes('filename="a.txt"') && e.body.includes("file-content") && e.body.includes('name="field"'),
  });
  const host = B.replace("http://", "");
  check(http.get(`http://user:pw@${host}/basic-auth/user/pw`), { "basic auth": (r) => r.status === 200 });
  check(http.get(`http://user:pw@${host}/digest-auth/user/pw`, { auth: "digest" }), { "digest auth": (r) => r.status === 200 && r.body === "digest ok" });
}
