// TLS: an unknown authority is error 1310 unless insecureSkipTLSVerify;
// tls_version, cipher suite and the TLS handshake timing are reported; the
// tlsVersion option pins the version.
// args: -i 1
// exit: 0
import http from "k6/http";
import { check } from "k6";
export const options = {
  insecureSkipTLSVerify: true,
  tlsVersion: http.TLS_1_2,
  thresholds: { checks: ["rate==1"], "http_reqs{tls_version:tls1.2}": ["count==2"], "http_req_tls_handshaking": ["max>0"] },
};
export default function () {
  const r = http.get(`${__ENV.TLSBASE}/echo`);
  check(r, {
    "status": (r) => r.status === 200,
    "tls version": (r) => r.tls_version === "tls1.2" && r.tls_cipher_suite.startsWith("TLS_"),
    "handshake timed": (r) => r.timings.tls_handshaking > 0,
    "http/2 over TLS": (r) => r.proto === "HTTP/2.0",
  });
  check(http.get(`${__ENV.TLSBASE}/echo`), { "reused: no handshake": (r) => r.timings.tls_handshaking === 0 && r.timings.connecting === 0 });
}
