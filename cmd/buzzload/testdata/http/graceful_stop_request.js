// A request cut off when gracefulStop runs out is not a failed request: no
// "Request Failed" warning, no samples, and no script code after it runs.
// exit: 0
// !stderr: Request Failed
// !stderr: after the request
import http from "k6/http";
export const options = {
  scenarios: { s: { executor: "constant-vus", vus: 3, duration: "1s", gracefulStop: "200ms" } },
  thresholds: { "http_reqs{name:slow}": ["count==0"] },
};
export default function () {
  http.get(`${__ENV.BASE}/delay/3000`, { tags: { name: "slow" } });
  console.log("after the request");
}
