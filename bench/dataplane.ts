// `npm run bench:dataplane`: the sandbox router (hosts/node/data-plane/) against the same requests
// sent straight to the envd stand-in on the sandbox's pod IP, in the same run, and against a
// minimal Node proxy (the control: what one more Node process on the path costs this machine).
// The router runs in a thread of the Node host's process (bench/host-process.ts), envd and the
// bench's holding server in another (bench/dataplane-pod.ts), the control in a third
// (bench/dataplane-control-proxy.ts), the load here. Each of ROUNDS rounds measures, in turn:
// STREAMS streams held open at once through the router (its memory per stream; first, before the
// other phases have grown the router's heap), the host's idle CPU (QUIET s) then HEALTH
// `GET /health` per side rotated over router, direct and control (latency; CPU per request),
// SDK_ITERATIONS `commands.run('true')` per side (router, direct) through the official e2b SDK
// (bench/dataplane-sdk.ts), and DOWNLOADS (9) downloads of a DOWNLOAD_MIB file per side, the three
// rotated (bytes/s, CPU). Prints each round's figures, then a table of every round, the median and
// the verdict per target. See docs/benchmarks.md.
import { execFileSync } from "node:child_process";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { downloadPhase, healthPhase, sdkPhase, streamsPhase } from "./dataplane-phases.ts";
import { figures, type Round, table } from "./dataplane-report.ts";
import { type Bench, BIG_FILE, removeFile, startBench } from "./dataplane-setup.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const HEALTH = Number(process.env.HEALTH ?? 2000);
const SDK_ITERATIONS = Number(process.env.SDK_ITERATIONS ?? 600);
const DOWNLOADS = Number(process.env.DOWNLOADS ?? 9);
const DOWNLOAD_BYTES = Number(process.env.DOWNLOAD_MIB ?? 100) * 1024 * 1024;
const STREAMS = Number(process.env.STREAMS ?? 1000);
const QUIET_S = Number(process.env.QUIET ?? 3);
const name = `bench-dataplane-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);

/** round measures every figure once. */
async function round(bench: Bench, i: number): Promise<Round> {
  const who = [
    { name: "router", pid: bench.host.pid },
    // The router's own process (the default), its CPU counted as the router's.
    ...(bench.host.dataPlane?.pid ? [{ name: "routerProcess", pid: bench.host.dataPlane.pid }] : []),
    { name: "envd", pid: bench.pod.pid },
    { name: "control", pid: bench.control.pid },
  ];
  log(`round ${i}: ${STREAMS} streams held open through the router`);
  const streams = await streamsPhase(bench, STREAMS);
  log(`round ${i}: the host's idle CPU over ${QUIET_S} s, then ${HEALTH} GET /health per side`);
  const health = await healthPhase(bench, who, HEALTH, QUIET_S);
  log(`round ${i}: ${SDK_ITERATIONS} commands.run('true') per side (e2b SDK)`);
  const sdk = await sdkPhase(bench, SDK_ITERATIONS);
  log(`round ${i}: ${DOWNLOADS} downloads of ${DOWNLOAD_BYTES} bytes per side`);
  const download = await downloadPhase(bench, who, DOWNLOAD_BYTES, DOWNLOADS, i);
  return { health, sdk, download, streams };
}

const code = execFileSync("git", ["describe", "--always", "--dirty"], { encoding: "utf8" }).trim();
const settings = { ROUNDS, HEALTH, SDK_ITERATIONS, DOWNLOADS, DOWNLOAD_BYTES, STREAMS, QUIET: QUIET_S };
console.log(`# bench:dataplane ${new Date().toISOString()}, code ${code}: ${JSON.stringify(settings)}`);
const state = await up({ name, nodes: 1, pullDelayMs: 200, backoffDelayMs: 1000, log });
let bench: Bench | undefined;
try {
  bench = await startBench(state, DOWNLOAD_BYTES, log);
  const rounds: Round[] = [];
  for (let i = 1; i <= ROUNDS; i++) {
    const r = await round(bench, i);
    rounds.push(r);
    const rows = figures([r]).map((f) => [f.name, Number((f.values[0] ?? 0).toFixed(f.digits))]);
    console.log(`round ${i}: ${JSON.stringify(Object.fromEntries(rows))}`);
  }
  console.log(table(figures(rounds)));
} finally {
  if (bench) {
    await removeFile(bench, BIG_FILE).catch((e: unknown) => log(`cleanup: ${String(e)}`));
    await bench.host.ask({ op: "close" }).catch(() => {});
    await bench.pod.ask({ op: "close" }).catch(() => {});
    await bench.control.ask({ op: "close" }).catch(() => {});
  }
  await down(name, log);
}
