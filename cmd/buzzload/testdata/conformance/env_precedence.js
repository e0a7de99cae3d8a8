// __ENV holds the system environment plus -e values, -e winning; K6_* real
// environment variables set options, flags win over them.
// args: -e FROM_FLAG=flag -e SHARED=flag -i 2
// env: SYSTEM_ONLY=sys SHARED=sys K6_ITERATIONS=5 K6_VUS=1
// exit: 0
// stderr: env=sys,flag,flag
// iterations: 2
export default function () {
  if (__ITER === 0) console.log("env=" + [__ENV.SYSTEM_ONLY, __ENV.FROM_FLAG, __ENV.SHARED].join(","));
}
