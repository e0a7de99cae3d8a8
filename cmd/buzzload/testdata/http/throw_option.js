// With throw, a failed request throws instead of returning an error response.
// args: -i 1 --throw
// exit: 0
// stderr: connection refused
import http from "k6/http";
export default function () {
  http.get(`http://${__ENV.REFUSED}/`);
  throw new Error("not reached");
}
