// `npm run bench:hosts-at-rest`: what it costs that every host reconciles (ADR 0030). One
// cluster, HOSTS host processes (each its own port and history file, each running its tick every
// 5 s; the apiserver sends audit events to the first), POOLS pools of PODS pods. It counts each
// host's apiserver requests while the pools fill, then, once every pod is idle and no host
// writes, over WINDOW seconds at rest (writes per tick: the target is 0), then for CHANGE seconds
// after one pool is scaled up by SCALE: writes, and the ones that lost (409/422). Figures come
// from each host's own /metrics. See docs/benchmarks.md.
import { down } from "../infra/cluster/down.ts";
import type { ClusterState } from "../infra/cluster/state.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import {
  forkPeer,
  type HostCounters,
  hostCounters,
  instanceId,
  metricsClient,
  total,
} from "./hosts-fleet.ts";
import { PodTally } from "./pod-tally.ts";
import { benchNamespacesAndHost, type HostProcess, namedPool, type Send, waitFor } from "./support.ts";

const HOSTS = Number(process.env.HOSTS ?? 3);
const POOLS = Number(process.env.POOLS ?? 3);
const PODS = Number(process.env.PODS ?? 20);
const WINDOW_S = Number(process.env.WINDOW ?? 60);
const SCALE = Number(process.env.SCALE ?? 5);
const CHANGE_S = Number(process.env.CHANGE ?? 20);
const name = `bench-hosts-${process.pid}`;
const NS = "bench";
const WRITES = new Set(["create", "patch", "update", "delete"]);
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;

/** Delta is what one host did between two readings. */
interface Delta {
  writes: number;
  reads: number;
  conflicts: number;
  ticks: number;
  byVerb: string;
}

function delta(a: HostCounters, b: HostCounters): Delta {
  let writes = 0;
  let reads = 0;
  const parts: string[] = [];
  for (const [key, v] of b.verbs) {
    const verb = key.split(" ")[0] ?? "";
    const d = v - (a.verbs.get(key) ?? 0);
    if (d === 0) continue;
    parts.push(`${key} ${d}`);
    if (WRITES.has(verb)) writes += d;
    else reads += d;
  }
  return {
    writes,
    reads,
    conflicts: total(b.conflicts) - total(a.conflicts),
    ticks: b.ticks - a.ticks,
    byVerb: parts.join(", "),
  };
}

/** startHosts forks HOSTS hosts on one cluster: the first on the port the apiserver calls back. */
async function startHosts(state: ClusterState) {
  const { admin, host } = await benchNamespacesAndHost(state, NS, { instanceId: instanceId(0) });
  const hosts: { host: HostProcess; metrics: Send }[] = [
    { host, metrics: metricsClient(state, state.hostPort) },
  ];
  for (let i = 1; i < HOSTS; i++) hosts.push(await forkPeer(state, i));
  return { admin, hosts };
}

/** readAll reads every host's counters at once. */
const readAll = (hosts: { metrics: Send }[]) => Promise.all(hosts.map((h) => hostCounters(h.metrics)));

/** table prints one row per host (and the sum) of what each did between two readings. */
function table(title: string, before: HostCounters[], after: HostCounters[]): string {
  const rows = before.map((b, i) => delta(b, after[i] as HostCounters));
  const per = (n: number, t: number) => (t > 0 ? (n / t).toFixed(2) : "–");
  const lines = [
    `| ${title} | ticks | writes | writes/tick | reads/tick | conflicts | conflicts/tick | requests by verb and resource |`,
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  rows.forEach((r, i) => {
    lines.push(
      `| host ${i} | ${r.ticks} | ${r.writes} | ${per(r.writes, r.ticks)} | ${per(r.reads, r.ticks)} | ${r.conflicts} | ${per(r.conflicts, r.ticks)} | ${r.byVerb || "none"} |`,
    );
  });
  const sum = (k: "ticks" | "writes" | "reads" | "conflicts") => rows.reduce((a, r) => a + r[k], 0);
  const total = {
    ticks: sum("ticks"),
    writes: sum("writes"),
    reads: sum("reads"),
    conflicts: sum("conflicts"),
  };
  lines.push(
    `| all | ${total.ticks} | ${total.writes} | ${per(total.writes, total.ticks)} | ${per(total.reads, total.ticks)} | ${total.conflicts} | ${per(total.conflicts, total.ticks)} | |`,
  );
  return lines.join("\n");
}

const state = await up({ name, nodes: 3, pullDelayMs: 200, backoffDelayMs: 1000, log });
let hosts: Awaited<ReturnType<typeof startHosts>>["hosts"] = [];
try {
  const started = await startHosts(state);
  const admin = started.admin;
  hosts = started.hosts;
  log(`${hosts.length} hosts up; creating ${POOLS} pools of ${PODS}`);
  const pools = Array.from({ length: POOLS }, (_, i) => `p${i}`);
  const fill0 = await readAll(hosts);
  for (const pool of pools) {
    const res = await admin(
      "POST",
      `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`,
      json(namedPool(NS, pool, PODS)),
    );
    if (res.status !== 201) throw new Error(`pool ${pool}: ${res.status} ${res.body.slice(0, 300)}`);
  }
  const tally = await PodTally.start(state, NS, SANDBOX_POOL_LABEL, pools);
  await waitFor(async () => tally.counts().idleReady === POOLS * PODS, 300_000);
  log("all pods idle and ready; waiting for two tick periods in which no host writes");
  let last = await readAll(hosts);
  await waitFor(async () => {
    // 13 s hold two whole ticks of every host (5 s apart; a tick spreads its pool runs over 1 s).
    await new Promise((r) => setTimeout(r, 13_000));
    const now = await readAll(hosts).catch((e: unknown) => {
      log(`reading the hosts' metrics: ${String(e)}`);
      throw e;
    });
    const deltas = last.map((b, i) => delta(b, now[i] as HostCounters));
    last = now;
    log(`hosts' writes, ticks: ${deltas.map((d) => `${d.writes}, ${d.ticks}`).join("; ")}`);
    return deltas.every((d) => d.writes === 0 && d.ticks >= 2);
  }, 300_000);

  log(`at rest: counting for ${WINDOW_S} s`);
  const rest0 = await readAll(hosts);
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const rest1 = await readAll(hosts);

  log(`change: scaling p0 from ${PODS} to ${PODS + SCALE}; counting for ${CHANGE_S} s`);
  const scaled = await admin(
    "PATCH",
    `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools/p0`,
    json({ spec: { replicas: PODS + SCALE } }),
    { "content-type": "application/merge-patch+json" },
  );
  if (scaled.status !== 200) throw new Error(`scale: ${scaled.status} ${scaled.body.slice(0, 300)}`);
  await new Promise((r) => setTimeout(r, CHANGE_S * 1000));
  const change1 = await readAll(hosts);
  const settled = tally.counts().idleReady;
  const pods = tally.counts();
  tally.stop();

  console.log(
    `\n## ${hosts.length} hosts reconciling one cluster: ${POOLS} pools × ${PODS} pods, tick 5 s each, audit events to host 0\n`,
  );
  console.log(table("fill: pools created → every pod idle, no host writing", fill0, rest0));
  console.log("");
  console.log(table(`at rest, ${WINDOW_S} s`, rest0, rest1));
  console.log("");
  console.log(table(`p0 scaled +${SCALE}, next ${CHANGE_S} s`, rest1, change1));
  console.log(`\nidle and ready after the change: ${settled} of ${POOLS * PODS + SCALE} (${json(pods)})\n`);
} finally {
  // The hosts outlive a failed run otherwise (the IPC channel closing does not stop them).
  for (const h of hosts) await h.host.ask({ op: "close" }).catch(() => {});
  await down(name, () => {});
}
