// `npm run bench:hosts` (issue #25): bursts of BURST creates with `wait` through 1, 2 … HOSTS
// hosts in one run (or only the numbers of hosts CONFIGS names, e.g. CONFIGS=1,3,5), each host a
// process of its own over one cluster, the creates spread over the hosts in turn. ROUNDS rounds,
// each configuration once per round, the order rotated so each goes first once. Before each burst
// the configuration's hosts run (host 0 always; peers forked, each then warmed by WARM creates, or
// closed), each makes one create and releases it (its idle feed is open, as host 0's is), and the
// pool of POOL pods is back to all idle and Ready; after it every sandbox is released. Per burst:
// Running/s, lost claims (the hosts' own conflict counters) and CPU per sandbox of every process
// (from /proc), with the machine's load and what other work took from it. See docs/benchmarks.md.
import { readFileSync } from "node:fs";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { requestCounts, requestTable } from "./apiserver-evidence.ts";
import { hostConfigs } from "./hosts-against-one.ts";
import {
  forkPeer,
  type HostCounters,
  hostCounters,
  instanceId,
  metricsClient,
  type Peer,
} from "./hosts-fleet.ts";
import { loadAverage, machineBusySeconds } from "./hosts-machine.ts";
import { type BurstRecord, report } from "./hosts-report.ts";
import { PodTally } from "./pod-tally.ts";
import {
  adminClient,
  benchNamespacesAndHost,
  cpuSeconds,
  growth,
  httpsClient,
  namedPool,
  percentile,
  type Send,
  waitFor,
} from "./support.ts";
import { timedBurst } from "./timed-burst.ts";

/** setting is the numeric setting `key` of the environment, or its default. */
const setting = (key: string, fallback: number) => Number(process.env[key] ?? fallback);
const BURST = setting("BURST", 1000);
const POOL = setting("POOL", BURST);
const HOSTS = setting("HOSTS", 3);
/**
 * CONFIGS: the numbers of hosts measured, e.g. "1,3,5" (default 1 … HOSTS). Ratios are taken
 * against the one-host burst of the same round, so a list without 1 gives none.
 */
const CONFIGS = hostConfigs(process.env.CONFIGS, HOSTS);
const ROUNDS = setting("ROUNDS", 3);
/**
 * SOCKETS: the client's connections in a burst, shared evenly by the hosts (256 as bench:claims's
 * client), so every configuration has as many creates in flight at once.
 */
const SOCKETS = setting("SOCKETS", 256);
const PULL_DELAY_MS = setting("PULL_DELAY_MS", 0);
/**
 * PACE: creates a second the client starts in a measured burst (0: all at once, as many in flight
 * as SOCKETS allow). Unpaced, the bursts keep both cores busy and every process's CPU is partly
 * its share of a saturated machine (the apiserver takes about one core for as long as a burst
 * lasts, whatever it serves); paced below what the machine can do, each process's CPU is its work.
 */
const PACE = setting("PACE", 0);
/** WARM: the creates a newly forked host serves before it is measured. */
const WARM = setting("WARM", 200);
/**
 * REST_S: seconds each configuration's processes are measured at rest before its burst (the hosts'
 * ticks and watches), so a burst's cost splits into per second and per sandbox.
 */
const REST_S = setting("REST", 10);
/** SETTLE_S bounds the wait for the pool to be all idle and Ready again. */
const SETTLE_S = setting("SETTLE", 600);
const NS = "bench";
const POOL_REF = `${NS}/burst`;
const name = `bench-hosts-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;
/** used is the CPU seconds each process used between two cpuSeconds readings. */
const used = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(growth(new Map(Object.entries(a)), new Map(Object.entries(b))));

const settings = { BURST, POOL, HOSTS, CONFIGS, ROUNDS, SOCKETS, WARM, REST: REST_S, PULL_DELAY_MS, PACE };
console.log(`# npm run bench:hosts ${json(settings)}\n`);
console.log(`machine at start: load average ${loadAverage()}`);
const state = await up({ name, nodes: 3, pullDelayMs: PULL_DELAY_MS, backoffDelayMs: 1000, log });
const fleet: (Peer & { api: Send })[] = [];
try {
  const { admin, host } = await benchNamespacesAndHost(state, NS, { instanceId: instanceId(0) });
  const ca = readFileSync(state.caCert);
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  const apiOf = (port: number, sockets = SOCKETS) =>
    httpsClient(`https://127.0.0.1:${port}`, ca, { "x-api-key": key }, sockets);
  fleet.push({
    host,
    port: state.hostPort,
    metrics: metricsClient(state, state.hostPort),
    api: apiOf(state.hostPort),
  });
  const created = await admin(
    "POST",
    `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`,
    json(namedPool(NS, "burst", POOL)),
  );
  if (created.status !== 201) throw new Error(`pool: ${created.status} ${created.body.slice(0, 300)}`);
  const tally = await PodTally.start(state, NS, `${SANDBOX_POOL_LABEL}=burst`, ["burst"]);
  const observer = adminClient(state);

  /** settle waits until the pool is all idle and Ready and no host has a run queued; its seconds. */
  const settle = async () => {
    const t0 = performance.now();
    await waitFor(async () => tally.counts().idleReady === POOL, SETTLE_S * 1000);
    await Promise.all(fleet.map((p) => p.host.ask({ op: "idle" })));
    return (performance.now() - t0) / 1000;
  };
  /** spread sends each request to the next host in turn (through `apis`, one per host). */
  const spread = (apis = fleet.map((p) => p.api)): Send => {
    let next = 0;
    return (...args) => (apis[next++ % apis.length] as Send)(...args);
  };
  /** release ends sandboxes through the hosts in turn, 100 at a time. */
  const release = async (ids: readonly string[]) => {
    const api = spread();
    for (let i = 0; i < ids.length; i += 100)
      await Promise.all(ids.slice(i, i + 100).map((id) => api("DELETE", `/v1/sandboxes/${id}`)));
  };
  /**
   * resize runs exactly k hosts: host 0 stays, peers are closed or forked. A new peer first serves
   * WARM creates with wait alone, so its code is as compiled (V8's JIT) as host 0's when it is measured.
   */
  const resize = async (k: number) => {
    while (fleet.length > k) await fleet.pop()?.host.ask({ op: "close" });
    while (fleet.length < k) {
      const peer = await forkPeer(state, fleet.length);
      const api = apiOf(peer.port);
      fleet.push({ ...peer, api });
      await settle();
      await release((await timedBurst(api, POOL_REF, WARM, { wait: true })).sandboxIds);
    }
  };

  /** measure runs one burst through the hosts running now and reads what it cost. */
  const measure = async (
    round: number,
    position: number,
  ): Promise<Omit<BurstRecord, "settleSeconds"> & { sandboxIds: string[] }> => {
    const processes = [...state.processes, ...fleet.map((p, i) => ({ name: `host ${i}`, pid: p.host.pid }))];
    const rest0 = cpuSeconds(processes, "load generator");
    await new Promise((r) => setTimeout(r, REST_S * 1000));
    const rest = used(rest0, cpuSeconds(processes, "load generator"));
    const loadBefore = loadAverage();
    const counters0 = await Promise.all(fleet.map((p) => hostCounters(p.metrics)));
    const requests0 = await requestCounts(observer);
    const busy0 = machineBusySeconds();
    const cpu0 = cpuSeconds(processes, "load generator");
    const sockets = Math.ceil(SOCKETS / fleet.length);
    const b = await timedBurst(
      spread(fleet.map((p) => apiOf(p.port, sockets))),
      POOL_REF,
      BURST,
      { wait: true },
      PACE,
    );
    const cpu1 = cpuSeconds(processes, "load generator");
    const busy1 = machineBusySeconds();
    const requests1 = await requestCounts(observer);
    const counters1 = await Promise.all(fleet.map((p) => hostCounters(p.metrics)));
    const cpu = used(cpu0, cpu1);
    const grown = (i: number, pick: (c: HostCounters) => Map<string, number>) =>
      growth(pick(counters0[i] as HostCounters), pick(counters1[i] as HostCounters));
    /** summed is what all hosts' counters (picked) grew by. */
    const summed = (pick: (c: HostCounters) => Map<string, number>) => {
      const out: Record<string, number> = {};
      for (const i of fleet.keys()) for (const [key, v] of grown(i, pick)) out[key] = (out[key] ?? 0) + v;
      return out;
    };
    return {
      round,
      position,
      hosts: fleet.length,
      creates: BURST,
      running: b.served.length,
      refused: b.refused.length,
      refusals: [...new Set(b.refusals)].slice(0, 3),
      lastRunningMs: b.lastServedMs,
      runningPerSecond: b.servedPerSecond,
      p50Ms: percentile(b.served, 50),
      p99Ms: percentile(b.served, 99),
      cpu,
      rest: { seconds: REST_S, cpu: rest },
      otherCpu: busy1 - busy0 - Object.values(cpu).reduce((a, x) => a + x, 0),
      seconds: b.lastServedMs / 1000,
      load: { before: loadBefore, after: loadAverage() },
      conflicts: summed((c) => c.conflicts),
      hostRequests: fleet.map((_, i) => grown(i, (c) => c.verbs).reduce((a, [, v]) => a + v, 0)),
      hostVerbs: summed((c) => c.verbs),
      apiserverConflicts: Object.fromEntries(
        growth(requests0, requests1).filter(([key, v]) => /4(09|22)$/.test(key) && v > 0),
      ),
      requests:
        round === 1
          ? requestTable(`${fleet.length} host(s): apiserver requests`, requests0, requests1, BURST)
          : "",
      sandboxIds: b.sandboxIds,
    };
  };

  log(`waiting for ${POOL} idle pods`);
  console.log(`pool of ${POOL} idle and Ready after ${(await settle()).toFixed(1)} s`);
  const records: BurstRecord[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const order = CONFIGS.map((_, i) => CONFIGS[(i + round - 1) % CONFIGS.length] as number);
    for (const [position, k] of order.entries()) {
      await resize(k);
      // One create and release through each host: its idle feed is open, as a serving host's is.
      const warm = await Promise.all(fleet.map((p) => timedBurst(p.api, POOL_REF, 1)));
      await release(warm.flatMap((w) => w.sandboxIds));
      await settle();
      log(`round ${round}: ${BURST} creates with wait through ${k} host(s)`);
      const { sandboxIds, ...r } = await measure(round, position + 1);
      // Every sandbox released, and the pool all idle and Ready again: how long that takes.
      const t0 = performance.now();
      await release(sandboxIds);
      await settle();
      records.push({ ...r, settleSeconds: (performance.now() - t0) / 1000 });
      log(
        `  ${r.running} Running, ${r.refused} 503, ${r.runningPerSecond.toFixed(0)}/s; lost claims ${r.conflicts["patch pods → starting"] ?? 0}; released and idle again in ${records.at(-1)?.settleSeconds.toFixed(1)} s; load ${loadAverage()}`,
      );
    }
  }
  await resize(1);
  tally.stop();
  console.log(`machine at end: load average ${loadAverage()}\n`);
  console.log(report(records));
} finally {
  for (const p of fleet) await p.host.ask({ op: "close" }).catch(() => {});
  await down(name, () => {});
}
