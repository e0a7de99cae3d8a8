// k6/experimental/websockets: the browser-style WebSocket on the event loop
// (open, message, ping/pong, close from either side), with the ws_* metrics;
// the iteration lasts while the socket is open.
// args: -i 2
// exit: 0
import { WebSocket } from "k6/experimental/websockets";
import { check } from "k6";
export const options = {
  thresholds: {
    checks: ["rate==1"],
    ws_sessions: ["count==4"],
    ws_msgs_sent: ["count==8"],
    ws_msgs_received: ["count==6"],
    ws_connecting: ["max<5000"],
    ws_session_duration: ["min>0"],
    data_sent: ["count>0"], // the socket's bytes are counted
    data_received: ["count>0"],
  },
};
export default function () {
  const url = __ENV.BASE.replace("http://", "ws://") + "/ws";
  const got = [];
  const ws = new WebSocket(url, "echo");
  ws.onopen = () => {
    ws.send("one");
    ws.send(new Uint8Array([1, 2, 3]).buffer);
    ws.ping();
  };
  ws.addEventListener("message", (e) => {
    got.push(typeof e.data === "string" ? e.data : new Uint8Array(e.data).length);
    if (got.length === 2) ws.close();
  });
  let pong = false;
  ws.onpong = () => { pong = true; };
  ws.onclose = (e) => {
    check(got, { "echoed text and binary": (g) => g[0] === "one" && g[1] === 3, "normal close": () => e.code === 1000, "pong": () => pong });
  };
  const ws2 = new WebSocket(url);
  ws2.onopen = () => { ws2.send("x"); ws2.send("close-me"); };
  const got2 = [];
  ws2.onmessage = (e) => got2.push(e.data);
  ws2.onclose = (e) => { check(e, { "server close code": (x) => x.code === 4000 && x.reason === "asked to" && got2[0] === "x" }); };
}
