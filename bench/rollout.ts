// `npm run bench:rollout`: how long a pool of POOL pods takes to roll to a changed pod spec, and the
// lowest count of claimable idle pods (idle, Ready, not being deleted) seen meanwhile, from a watch
// of the pool's pods (every event counted, no polling). CLIENTS agents create a sandbox (wait until
// it runs), hold it HOLD_MS and release it, before and during the rollout, so the floor is
// compared with the same load's before the change. The host runs in its own process with its
// audit-triggered runs and 5 s ticks, as deployed. See docs/benchmarks.md, "Rollouts" (ADR 0031).
import { execFileSync } from "node:child_process";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { POD_REVISION_LABEL, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import { podRevision } from "../lib/pool/render-pod.ts";
import { follow } from "./follow.ts";
import { benchTenant, cpuSeconds, cpuTable, namedPool, waitFor } from "./support.ts";

const POOL = Number(process.env.POOL ?? 200);
const CLIENTS = Number(process.env.CLIENTS ?? 10);
const HOLD_MS = Number(process.env.HOLD_MS ?? 500);
const BEFORE_S = Number(process.env.BEFORE ?? 40);
const PULL_DELAY_MS = Number(process.env.PULL_DELAY_MS ?? 200);
const MAX_SURGE = process.env.MAX_SURGE;
const name = `bench-rollout-${process.pid}`;
const NS = "bench";
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;
const uptime = () => execFileSync("uptime", { encoding: "utf8" }).trim();

/** Seen is what the bench keeps of a pod from the watch. */
interface Seen {
  phase: string | undefined;
  ready: boolean;
  terminating: boolean;
  revision: string | undefined;
}

/** Pods follows the pool's pods and keeps the lowest claimable count seen since `mark`. */
class Pods {
  readonly pods = new Map<string, Seen>();
  lowest = Number.POSITIVE_INFINITY;
  /** atLowest: the pods by state (and revision, when one is given) when the lowest was seen. */
  atLowest: Record<string, number> = {};
  revision: string | undefined;
  private marked = false;

  onPod(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name ?? "";
    if (type === "DELETED") this.pods.delete(name);
    else
      this.pods.set(name, {
        phase: pod.metadata?.labels?.[SANDBOX_PHASE_LABEL],
        ready: pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
        terminating: Boolean(pod.metadata?.deletionTimestamp),
        revision: pod.metadata?.labels?.[POD_REVISION_LABEL],
      });
    if (this.marked && this.claimable() < this.lowest) {
      this.lowest = this.claimable();
      this.atLowest = this.states();
    }
  }

  /** states counts the pods by phase (idle split by readiness), terminating apart, and revision. */
  states(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of this.pods.values()) {
      const state = p.terminating ? "terminating" : p.phase === "idle" && !p.ready ? "idle-unready" : p.phase;
      const key = `${state}${this.revision && p.revision !== this.revision ? " (old)" : ""}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }

  /** mark starts the floor over (a new stage of the bench). */
  mark(): void {
    this.marked = true;
    this.lowest = this.claimable();
    this.atLowest = this.states();
  }

  claimable(): number {
    return [...this.pods.values()].filter((p) => p.phase === "idle" && p.ready && !p.terminating).length;
  }

  /** at counts the live pods at `revision`, and all pods. */
  at(revision: string): { at: number; live: number; all: number } {
    const all = [...this.pods.values()];
    const live = all.filter((p) => !p.terminating);
    return { at: live.filter((p) => p.revision === revision).length, live: live.length, all: all.length };
  }
}

const state = await up({ name, nodes: 3, pullDelayMs: PULL_DELAY_MS, backoffDelayMs: 1000, log });
try {
  const { admin, host, processes, api } = await benchTenant(state, NS);
  const poolPath = `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`;
  const pool = namedPool(NS, "roll", POOL);
  const body = MAX_SURGE
    ? {
        ...pool,
        spec: { ...pool.spec, rollout: { maxSurge: /%$/.test(MAX_SURGE) ? MAX_SURGE : Number(MAX_SURGE) } },
      }
    : pool;
  const created = await admin("POST", poolPath, json(body));
  if (created.status !== 201) throw new Error(`pool: ${created.status} ${created.body.slice(0, 300)}`);
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const pods = new Pods();
  const following = await follow(
    kc,
    `/api/v1/namespaces/${NS}/pods`,
    `${SANDBOX_POOL_LABEL}=roll`,
    (items: V1Pod[]) => {
      pods.pods.clear();
      for (const p of items) pods.onPod("ADDED", p);
    },
    (type, p: V1Pod) => pods.onPod(type, p),
  );
  log(`waiting for ${POOL} idle pods`);
  await waitFor(async () => pods.claimable() === POOL, 600_000);
  await host.ask({ op: "idle" });

  let stopping = false;
  let cycles = 0;
  const failures: string[] = [];
  const client = async () => {
    while (!stopping) {
      const res = await api(
        "POST",
        "/v1/sandboxes",
        json({ pool: `${NS}/roll`, wait: true, waitTimeout: 120 }),
      );
      if (res.status !== 201) {
        failures.push(`create ${res.status}`);
        continue;
      }
      const id = (JSON.parse(res.body) as { sandboxId: string }).sandboxId;
      await new Promise((r) => setTimeout(r, HOLD_MS));
      const released = await api("DELETE", `/v1/sandboxes/${id}`);
      if (released.status !== 204) failures.push(`release ${released.status}`);
      cycles++;
    }
  };
  const clients = Array.from({ length: CLIENTS }, client);
  log(`${CLIENTS} clients for ${BEFORE_S} s before the change`);
  await new Promise((r) => setTimeout(r, 2000)); // the load settles in before its floor counts
  pods.mark();
  await new Promise((r) => setTimeout(r, BEFORE_S * 1000));
  const lowestBefore = pods.lowest;
  const atLowestBefore = pods.atLowest;
  const cyclesBefore = cycles;
  const loadBefore = uptime();

  const current = JSON.parse((await admin("GET", `${poolPath}/roll`)).body) as SandboxPool;
  const old = podRevision(current);
  const env = [{ name: "MODE", value: "v2" }];
  const changed = structuredClone(current);
  const spec = changed.spec.template?.spec as { containers: Record<string, unknown>[] } | undefined;
  if (!spec?.containers[0]) throw new Error("the pool has no container");
  spec.containers[0].env = env;
  const revision = podRevision(changed);
  pods.revision = revision;
  const cpu0 = cpuSeconds(processes, "load generator");
  pods.mark();
  const start = performance.now();
  const patched = await admin(
    "PATCH",
    `${poolPath}/roll`,
    json([{ op: "add", path: "/spec/template/spec/containers/0/env", value: env }]),
    { "content-type": "application/json-patch+json" },
  );
  if (patched.status !== 200) throw new Error(`patch: ${patched.status} ${patched.body.slice(0, 300)}`);
  if (podRevision(JSON.parse(patched.body) as SandboxPool) !== revision)
    throw new Error("unexpected revision");
  log(`rolling ${POOL} pods from pod revision ${old} to ${revision}`);
  const progress = setInterval(() => {
    const n = pods.at(revision);
    log(
      `${n.at}/${POOL} at the new revision, ${n.live} live, ${pods.claimable()} claimable, lowest ${pods.lowest}`,
    );
  }, 5000);
  // Rolled: no live pod of another revision is left; settled: the surge is gone too.
  let rolled = 0;
  let lowestDuring = pods.lowest;
  let atLowestDuring = pods.atLowest;
  await waitFor(async () => {
    const n = pods.at(revision);
    if (!rolled && n.at === n.live && n.live >= POOL) {
      rolled = (performance.now() - start) / 1000;
      lowestDuring = pods.lowest;
      atLowestDuring = pods.atLowest;
    }
    return n.at === POOL && n.live === POOL && n.all === POOL;
  }, 1_200_000).finally(() => clearInterval(progress));
  const seconds = (performance.now() - start) / 1000;
  const lowestSettling = pods.lowest;
  const cpu = cpuTable("rollout: process", cpu0, cpuSeconds(processes, "load generator"), seconds);
  const loadAfter = uptime();
  // The status follows on the pool's next run.
  let status: SandboxPool["status"];
  await waitFor(async () => {
    status = (JSON.parse((await admin("GET", `${poolPath}/roll`)).body) as SandboxPool).status;
    return status?.outdatedReplicas === 0 && status.currentRevision === revision;
  }, 60_000);
  const statusSeconds = (performance.now() - start) / 1000;
  stopping = true;
  await Promise.all(clients);
  following.stop();
  await host.ask({ op: "close" });

  console.log(
    `\n## Rollout: ${POOL} pods, maxSurge ${MAX_SURGE ?? "25% (default)"}, ${CLIENTS} clients holding sandboxes ${HOLD_MS} ms, pull delay ${PULL_DELAY_MS} ms\n`,
  );
  console.log("| figure | value |\n| --- | --- |");
  console.log(
    `| time to roll (patch → no live pod of the old revision, ${POOL} at the new one) | ${rolled.toFixed(1)} s |`,
  );
  console.log(
    `| time until exactly ${POOL} pods remain (any surge left scaled down, nothing terminating) | ${seconds.toFixed(1)} s |`,
  );
  console.log(`| time until the status says RolloutComplete | ${statusSeconds.toFixed(1)} s |`);
  console.log(
    `| lowest claimable idle pods, ${BEFORE_S} s of the same load before the change | ${lowestBefore} |`,
  );
  console.log(
    `| lowest claimable idle pods during the rollout / until settled | ${lowestDuring} / ${lowestSettling} |`,
  );
  const states = (m: Record<string, number>) =>
    Object.entries(m)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  console.log(`| pods at the lowest, before | ${states(atLowestBefore)} |`);
  console.log(`| pods at the lowest, during | ${states(atLowestDuring)} |`);
  console.log(`| sandboxes created (before / during) | ${cyclesBefore} / ${cycles - cyclesBefore} |`);
  console.log(
    `| failed creates or releases | ${failures.length}${failures.length ? ` (${failures.slice(0, 5).join(", ")})` : ""} |`,
  );
  console.log(
    `| status after | updated ${status?.updatedReplicas}, outdated ${status?.outdatedReplicas}, currentRevision ${status?.currentRevision} (new: ${revision}) |`,
  );
  console.log(
    `| machine load (uptime) before the change / after the rollout | ${loadBefore} / ${loadAfter} |`,
  );
  console.log(`\n${cpu}\n`);
  console.log(
    json({
      pool: POOL,
      clients: CLIENTS,
      holdMs: HOLD_MS,
      maxSurge: MAX_SURGE ?? "25%",
      rolled,
      seconds,
      statusSeconds,
      lowestBefore,
      lowestDuring,
      lowestSettling,
      failures,
    }),
  );
} finally {
  await down(name, () => {});
}
