// The phases of one round of `npm run bench:dataplane`, each alternating or rotating its sides
// (router, direct, and for /health and downloads the control proxy), each returning its part of
// the round's raw figures (bench/dataplane-report.ts reads them).
import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import {
  downloadRate,
  healthLatencies,
  holdStreams,
  rotated,
  rssBytes,
  v8BackgroundSeconds,
} from "./dataplane-measure.ts";
import type { CpuUse, Round } from "./dataplane-report.ts";
import { type Bench, BIG_FILE } from "./dataplane-setup.ts";
import { cpuSeconds } from "./support.ts";

/** Processes names the processes whose CPU a phase reads (router, envd, control; the client is this one). */
type Processes = readonly { name: string; pid: number }[];

/**
 * cpuNow reads router, envd, control and client (this process) CPU seconds, and the share of the
 * router's and the control's that V8's background threads used (routerV8, controlV8).
 */
function cpuNow(who: Processes): Record<string, number> {
  const v8 = (...names: string[]) => {
    const ps = who.filter((w) => names.includes(w.name));
    return ps.length ? ps.reduce((sum, p) => sum + v8BackgroundSeconds(p.pid), 0) : Number.NaN;
  };
  const { routerProcess, ...cpu } = cpuSeconds(who, "client");
  // The router in a process of its own: the host's process and the router's are the router's side.
  const host = cpu.router ?? Number.NaN;
  if (routerProcess !== undefined) cpu.router = (cpu.router ?? 0) + routerProcess;
  return { ...cpu, host, routerV8: v8("router", "routerProcess"), controlV8: v8("control") };
}

/**
 * streamsPhase holds n streams open at once through the router, and reads the router's memory
 * before (after a GC) and with them open (as is, then after a GC); then ends them from the server.
 */
export async function streamsPhase(bench: Bench, n: number): Promise<Round["streams"]> {
  // The router's own process (the default) adds its resident memory to the host's.
  const routerPid = bench.host.dataPlane?.pid;
  const routerRss = () => (routerPid ? rssBytes(routerPid) : 0);
  const before = await bench.host.ask({ op: "memory" });
  const routerBefore = routerRss();
  const held = await holdStreams(bench.hold, "/stream", n);
  try {
    const { held: heldAtOnce } = (await bench.pod.ask({ op: "held" })) as { held: number };
    const rssOpen = rssBytes(bench.host.pid) + routerRss();
    const open = await bench.host.ask({ op: "memory" });
    const routerOpen = routerRss();
    await bench.pod.ask({ op: "release" });
    await held.ended(60_000);
    return {
      n,
      opened: held.opened,
      heldAtOnce,
      openSeconds: held.openSeconds,
      rssBefore: before.rss + routerBefore,
      rssOpen,
      rssOpenAfterGc: open.rss + routerOpen,
      heapBefore: before.heapUsed + before.external,
      heapOpen: open.heapUsed + open.external,
    };
  } finally {
    held.destroy();
  }
}

/**
 * healthPhase reads the router host's idle CPU rate over quietSeconds, then sends n GET /health
 * per side: latencies, and the CPU each process used (the router's idle share estimated).
 */
export async function healthPhase(
  bench: Bench,
  who: Processes,
  n: number,
  quietSeconds: number,
): Promise<Round["health"]> {
  const quiet0 = cpuNow(who);
  await sleep(quietSeconds * 1000);
  const idleRate = ((cpuNow(who).router ?? 0) - (quiet0.router ?? 0)) / quietSeconds;
  const cpu0 = cpuNow(who);
  const started = performance.now();
  const latencies = await healthLatencies(bench.envd, n);
  const seconds = (performance.now() - started) / 1000;
  const cpu1 = cpuNow(who);
  const used = (k: string) => (cpu1[k] ?? 0) - (cpu0[k] ?? 0);
  return {
    ...latencies,
    cpu: {
      router: used("router"),
      routerIdle: idleRate * seconds,
      envd: used("envd"),
      control: used("control"),
      client: used("client"),
    },
  };
}

/** downloadPhase downloads the big file `times` per side, rotating; bytes/s and CPU per side. */
export async function downloadPhase(
  bench: Bench,
  who: Processes,
  bytes: number,
  times: number,
  round: number,
): Promise<Round["download"]> {
  const none = (): CpuUse => ({
    router: 0,
    routerV8: 0,
    host: 0,
    envd: 0,
    control: 0,
    controlV8: 0,
    client: 0,
    seconds: 0,
  });
  const out: Round["download"] = {
    bytes,
    router: [],
    direct: [],
    control: [],
    cpu: { router: none(), direct: none(), control: none() },
  };
  const path = `/files?path=${encodeURIComponent(BIG_FILE)}`;
  for (let d = 0; d < times; d++) {
    for (const side of rotated(d + round)) {
      const before = cpuNow(who);
      const t0 = performance.now();
      out[side].push(await downloadRate(bench.envd[side], path, bytes));
      const after = cpuNow(who);
      const cpu = out.cpu[side];
      cpu.seconds += (performance.now() - t0) / 1000;
      for (const k of ["router", "routerV8", "host", "envd", "control", "controlV8", "client"] as const)
        cpu[k] += (after[k] ?? 0) - (before[k] ?? 0);
    }
  }
  return out;
}

/** sdkPhase times commands.run('true') through the e2b SDK in a process of its own. */
export async function sdkPhase(bench: Bench, iterations: number): Promise<Round["sdk"]> {
  const { stdout } = await promisify(execFile)(
    "node_modules/.bin/node",
    [new URL("./dataplane-sdk.ts", import.meta.url).pathname],
    {
      env: {
        ...process.env,
        ...bench.sdkEnv,
        BENCH_SANDBOX: bench.sandboxId,
        BENCH_ROUTER_URL: bench.routerUrl,
        BENCH_DIRECT_URL: bench.directUrl,
        BENCH_ITERATIONS: String(iterations),
      },
      timeout: 600_000,
      maxBuffer: 16 << 20,
    },
  );
  const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Partial<Round["sdk"]> & {
    error?: string;
  };
  if (out.error || !out.router || !out.direct)
    throw new Error(`the SDK script failed: ${out.error ?? stdout}`);
  return { router: out.router, direct: out.direct };
}
