// k6/x/buzz is registered in `buzzload run`.
// exit: 0
// stderr: buzz.load=function
import buzz from "k6/x/buzz";
console.log("buzz.load=" + typeof buzz.load);
export default function () {}
