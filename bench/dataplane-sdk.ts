// The official e2b SDK, unmodified, timing `commands.run('true')` for `npm run bench:dataplane`:
// one process, two handles on the same sandbox, one whose envd calls go through the router
// (sandboxUrl = the router's plain listener: header routing) and one straight to the envd
// stand-in on the pod's IP. Iterations alternate the sides (and which goes first), so both meet
// the same machine. Configured as a user configures the SDK (E2B_API_URL, E2B_API_KEY,
// NODE_EXTRA_CA_CERTS) plus BENCH_SANDBOX, BENCH_ROUTER_URL, BENCH_DIRECT_URL and
// BENCH_ITERATIONS; prints one JSON line: {router: ms[], direct: ms[]} or {error}.
import { Sandbox } from "e2b";

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

try {
  const id = env("BENCH_SANDBOX");
  const iterations = Number(env("BENCH_ITERATIONS"));
  const sides = {
    router: await Sandbox.connect(id, { sandboxUrl: env("BENCH_ROUTER_URL") }),
    direct: await Sandbox.connect(id, { sandboxUrl: env("BENCH_DIRECT_URL") }),
  };
  const times: Record<keyof typeof sides, number[]> = { router: [], direct: [] };
  const once = async (side: keyof typeof sides) => {
    const started = performance.now();
    const run = await sides[side].commands.run("true");
    const ms = performance.now() - started;
    if (run.exitCode !== 0) throw new Error(`${side}: true exited ${run.exitCode}`);
    return ms;
  };
  // Warm-up: connections opened, code paths compiled, on both sides.
  for (let i = 0; i < 10; i++) for (const side of ["router", "direct"] as const) await once(side);
  for (let i = 0; i < iterations; i++) {
    const order = i % 2 === 0 ? (["router", "direct"] as const) : (["direct", "router"] as const);
    for (const side of order) times[side].push(await once(side));
  }
  console.log(JSON.stringify(times));
} catch (e) {
  console.log(JSON.stringify({ error: `${(e as Error).name}: ${(e as Error).message}` }));
}
