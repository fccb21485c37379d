// `npm run bench:autoscale`: an open-loop demand curve against autoscaled Envs, one scenario per
// growth mode and starting size, all in one run on one cluster and one host. Each scenario ramps
// creates 0 → 20 → 50 per second, holds, and stops; every sandbox lives LIFETIME seconds. It
// reports what users feel (503s, create → Running), how fast the group wakes, how much idle
// capacity it keeps, and how long it takes to shrink back. COOLDOWN_MODES=waiters,strict runs each
// scenario once per cooldown mode per round (ROUNDS), each on a host of its own started with that
// mode (ADR 0034). See docs/benchmarks.md.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import type { CooldownMode } from "../lib/autoscale/group-decision.ts";
import { SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { demandCurve } from "./demand-curve.ts";
import { PodTally } from "./pod-tally.ts";
import {
  adminClient,
  benchNamespacesAndHost,
  cpuSeconds,
  cpuTable,
  forkHost,
  type HostProcess,
  httpsClient,
  percentile,
  type Send,
  waitFor,
} from "./support.ts";

const PULL_DELAY_MS = Number(process.env.PULL_DELAY_MS ?? 500);
const LIFETIME_S = Number(process.env.LIFETIME ?? 3);
const MODES = (process.env.MODES ?? "Conservative,Default,Aggressive").split(",");
const STARTS = (process.env.STARTS ?? "0,5").split(",").map(Number);
/**
 * COOLDOWN_MODES: unset, one host with the default mode serves every scenario; set, each scenario
 * runs once per listed mode (in that order) on a fresh host, ROUNDS times over.
 */
const COOLDOWN_MODES = process.env.COOLDOWN_MODES?.split(",") as CooldownMode[] | undefined;
const ROUNDS = Number(process.env.ROUNDS ?? 1);
/** The demand curve: creates per second at each point in time (linear in between), then 0. */
const RAMP = Number(process.env.RAMP ?? 20);
const PEAK = Number(process.env.PEAK ?? 50);
const CURVE: [number, number][] = [
  [0, 0],
  [5, RAMP],
  [10, PEAK],
  [25, PEAK],
];
const WAIT_TIMEOUT_S = 10;
const name = `bench-autoscale-${process.pid}`;
const NS = "bench";
const API = "/apis/agents.navix.sh/v1alpha1";
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;

let hostPid = 0;
/** api is the host's sandbox API, as the bench's tenant. */
let api: Send = async () => {
  throw new Error("no API client yet");
};
const state = await up({ name, nodes: 3, pullDelayMs: PULL_DELAY_MS, backoffDelayMs: 1000, log });
try {
  const { admin, host: first } = await benchNamespacesAndHost(state, NS);
  let host: HostProcess = first;
  hostPid = host.pid;
  // The host installs the CRDs: the template comes after it.
  must(
    await admin(
      "POST",
      `${API}/sandboxtemplates`,
      json({
        apiVersion: "agents.navix.sh/v1alpha1",
        kind: "SandboxTemplate",
        metadata: { name: "bench-autoscale" },
        spec: {
          idleImage: "registry.local/sandbox/idle:1",
          template: { spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] } },
        },
      }),
    ),
    201,
  );
  /** useHost makes `host` the one the next scenario talks to (its API key, its pid for the CPU). */
  const useHost = async (next: HostProcess) => {
    host = next;
    hostPid = host.pid;
    const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
    api = httpsClient(
      `https://127.0.0.1:${state.hostPort}`,
      readFileSync(state.caCert),
      { "x-api-key": key },
      1024,
    );
  };
  await useHost(host);
  const results = [];
  for (let round = 1; round <= ROUNDS; round++)
    for (const min of STARTS)
      for (const mode of MODES)
        for (const cooldown of COOLDOWN_MODES ?? [undefined]) {
          if (cooldown) {
            // A fresh host per scenario, so both cooldown modes start alike (cold caches and all).
            await host.ask({ op: "close" }).catch(() => {});
            await useHost(await forkHost(state, "on", { autoscale: { cooldownMode: cooldown } }));
          }
          const load = execFileSync("uptime", { encoding: "utf8" }).trim();
          log(
            `scenario ${mode}, starting at ${min}, cooldown ${cooldown ?? "default"}, round ${round}: ${load}`,
          );
          const result = await scenario(mode, min, cooldown ? `-${cooldown[0]}${round}` : "");
          const row = { mode, start: min, ...(cooldown ? { cooldown, round, uptime: load } : {}), ...result };
          console.log(json(row));
          results.push(row);
        }
  console.log(table(results));
  await host.ask({ op: "close" }).catch(() => {});
} finally {
  await down(name, log);
}

/** must fails the run on an unexpected answer to a setup request. */
function must(res: { status: number; body: string }, want: number): void {
  if (res.status !== want) throw new Error(`setup request answered ${res.status}: ${res.body}`);
}

/** envBody is the scenario's Env: two members of one group, the given mode and minimum. */
function envBody(env: string, mode: string, min: number) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxEnv",
    metadata: { name: env, namespace: NS },
    spec: {
      templateRef: { name: "bench-autoscale" },
      clusters: [
        {
          clusterID: "local",
          members: ["a", "b"].map((m, i) => ({
            name: `${env}-${m}`,
            config: { scalingGroup: "default", priority: i },
          })),
        },
      ],
      autoscaling: {
        groups: [
          {
            name: "default",
            enabled: true,
            minReplicas: min,
            maxReplicas: 400,
            scaleUpPolicy: {
              mode,
              cooldownSeconds: 10,
              idleThresholdSeconds: 5,
              idleZeroQuietWindowSeconds: 60,
              saturationCooldownSeconds: 30,
            },
            scaleDownPolicy: { idleTimeoutSeconds: 10, stabilizationSeconds: 5, protectionWindowSeconds: 2 },
          },
        ],
      },
    },
  };
}

/** groupReplicas sums the Env's member replicas (what the autoscaler set). */
async function groupReplicas(env: string): Promise<number> {
  const res = await adminClient(state)("GET", `${API}/namespaces/${NS}/sandboxenvs/${env}`);
  const body = JSON.parse(res.body) as {
    spec: { clusters: { members: { spec?: { replicas?: number } }[] }[] };
  };
  return body.spec.clusters[0]?.members.reduce((n, m) => n + (m.spec?.replicas ?? 0), 0) ?? 0;
}

async function scenario(mode: string, min: number, suffix: string) {
  const admin = adminClient(state);
  const env = `as-${mode.toLowerCase()}-${min}${suffix}`;
  const pools = [`${env}-a`, `${env}-b`];
  must(await admin("POST", `${API}/namespaces/${NS}/sandboxenvs`, json(envBody(env, mode, min))), 201);
  const tally = await PodTally.start(state, NS, `${SANDBOX_POOL_LABEL} in (${pools.join(",")})`, pools);
  const poolsReady = async () => {
    for (const p of pools) {
      const res = await admin("GET", `${API}/namespaces/${NS}/sandboxpools/${p}`);
      if (res.status !== 200 || !(JSON.parse(res.body) as { status?: unknown }).status) return false;
    }
    return true;
  };
  await waitFor(
    async () =>
      (await poolsReady()) && tally.counts().idleReady === min && (await groupReplicas(env)) === min,
    120_000,
  );
  await new Promise((r) => setTimeout(r, 1000));
  const processes = [...state.processes, { name: "host (Node)", pid: hostPid }];
  const cpuBefore = cpuSeconds(processes, "bench");
  const t0 = performance.now();
  tally.mark(t0);
  const creates: { at: number; ms: number; status: number }[] = [];
  // PROGRESS=1 prints, every second of the load, the group's replicas and its pods by phase.
  const progress = process.env.PROGRESS
    ? setInterval(async () => {
        const replicas = await groupReplicas(env).catch(() => -1);
        const t = ((performance.now() - t0) / 1000).toFixed(0);
        log(`${env} t=${t}s replicas ${replicas} ${json(tally.phases())} answered ${creates.length}`);
      }, 1000)
    : undefined;
  const load = await demandCurve(CURVE, async (at) => {
    const res = await api(
      "POST",
      "/v1/sandboxes",
      json({ env: `${NS}/${env}`, wait: true, waitTimeout: WAIT_TIMEOUT_S }),
    ).catch(() => ({ status: 0, body: "" }));
    creates.push({ at: at - t0, ms: performance.now() - at, status: res.status });
    if (res.status !== 201) return;
    const id = (JSON.parse(res.body) as { sandboxId: string }).sandboxId;
    await new Promise((r) => setTimeout(r, LIFETIME_S * 1000));
    await api("DELETE", `/v1/sandboxes/${id}`).catch(() => log(`${env}: release of ${id} failed`));
  });
  const loadEnd = performance.now();
  await load.settled;
  clearInterval(progress);
  const busyEnd = performance.now();
  // Pod-seconds up to the last release: the shrink back below is timed on its own.
  const overhead = tally.podSeconds(busyEnd);
  console.error(
    cpuTable(`${env}: CPU during the load`, cpuBefore, cpuSeconds(processes, "bench"), (busyEnd - t0) / 1000),
  );
  let shrinkS: number | undefined;
  await waitFor(async () => {
    const done = (await groupReplicas(env)) === min && tally.counts().live === min;
    if (done) shrinkS = (performance.now() - loadEnd) / 1000;
    return done;
  }, 180_000).catch(() => log(`${env}: did not shrink back to ${min} within 180 s`));
  for (let from = 0; from < CURVE[CURVE.length - 1]![0] * 1000; from += 2500) {
    const slice = creates.filter((c) => c.at >= from && c.at < from + 2500);
    const served = slice.filter((c) => c.status === 201).map((c) => c.ms);
    console.error(
      `[bench] ${env} t=${(from / 1000).toFixed(1)}s: ${slice.length} creates, ${slice.length - served.length} not 201, p50 ${percentile(served, 50).toFixed(0)} ms, idle now ${tally.counts().idle}`,
    );
  }
  const ok = creates.filter((c) => c.status === 201).map((c) => c.ms);
  const unavailable = creates.filter((c) => c.status === 503).length;
  const other = creates.filter((c) => c.status !== 201 && c.status !== 503);
  const wake = tally.wake();
  await admin("DELETE", `${API}/namespaces/${NS}/sandboxenvs/${env}`);
  await waitFor(async () => tally.counts().all === 0, 120_000);
  tally.stop();
  return {
    creates: creates.length,
    served: ok.length,
    rate503: unavailable / creates.length,
    otherErrors: other.length,
    otherStatuses: [...new Set(other.map((c) => c.status))],
    /** first503S and last503S: when (s into the load) creates began and stopped getting 503s. */
    first503S: creates.find((c) => c.status === 503)?.at,
    last503S: creates.findLast((c) => c.status === 503)?.at,
    p50ToRunningMs: percentile(ok, 50),
    p99ToRunningMs: ok.length >= 100 ? percentile(ok, 99) : undefined,
    firstCreateMs: creates.reduce<(typeof creates)[number] | undefined>(
      (a, c) => (a && a.at <= c.at ? a : c),
      undefined,
    )?.ms,
    unmetToNewIdleMs: wake,
    idlePerBusy: overhead.busy > 0 ? overhead.idle / overhead.busy : undefined,
    idleSecondsPerServed: ok.length > 0 ? overhead.idle / ok.length : undefined,
    idlePodSeconds: overhead.idle,
    busyPodSeconds: overhead.busy,
    shrinkBackS: shrinkS,
    /** stays: the median ms pods spent in each state (starting, running, stopping, idle-false/true). */
    stays: tally.stayTimes(),
    pullDelayMs: PULL_DELAY_MS,
  };
}

function table(rows: Record<string, unknown>[]): string {
  const f = (v: unknown, d = 0) => (typeof v === "number" ? v.toFixed(d) : "–");
  const lines = [
    "| mode | start | cooldown | creates | 503s | p50 → Running | p99 → Running | first create | unmet → new idle | idle/busy | shrink back |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.mode} | ${r.start} | ${r.cooldown ?? "waiters"} | ${r.creates} | ${f(Number(r.rate503) * 100, 2)} % | ${f(r.p50ToRunningMs)} ms | ${f(r.p99ToRunningMs)} ms | ${f(r.firstCreateMs)} ms | ${f(r.unmetToNewIdleMs)} ms | ${f(Number(r.idlePerBusy) * 100, 0)} % | ${f(r.shrinkBackS, 1)} s |`,
    ),
  ];
  return lines.join("\n");
}
