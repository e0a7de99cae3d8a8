// A k6/http option of the wrong type or value is a config error (104) naming
// the key, like every other option.
// exit: 104
// stderr: maxRedirects
// stderr: tlsVersion
import http from "k6/http";
export const options = { maxRedirects: "ten", tlsVersion: "tls9" };
export default function () { http.get("http://127.0.0.1:1/"); }
