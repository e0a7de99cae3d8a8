// Async default functions, timers and promises finish before the iteration ends.
// args: -i 2
// exit: 0
// count-stderr: done= = 2
export default async function () {
  const v = await new Promise((res) => setTimeout(() => res(__ITER), 10));
  let ticks = 0;
  await new Promise((res) => { const id = setInterval(() => { if (++ticks === 3) { clearInterval(id); res(); } }, 1); });
  console.log("done=" + v + "/" + ticks);
}
