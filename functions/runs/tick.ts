import type { V1Pod } from "@kubernetes/client-node";
import pLimit from "p-limit";
import { planAdoption } from "../../lib/env/adoption.ts";
import type { EnvSnapshot } from "../../lib/env/plan-env.ts";
import { partitionPods } from "../../lib/membership/pod-ownership.ts";
import { planFinalizeDeleted } from "../../lib/reconcile/finalize-deleted.ts";
import { sweepEgressPolicies } from "../egress/sweep-policies.ts";
import type { HostDeps } from "../host-deps.ts";
import { readInstanceTypes } from "../instance-types.ts";
import { sweepSnapshots } from "../snapshots/sweep-snapshots.ts";
import { execute } from "../steps/execute.ts";
import { type PoolSnapshot, readCluster } from "../steps/snapshot.ts";
import { type EnvReport, reconcileEnv } from "./reconcile-env.ts";
import { type PoolReport, RECONCILE, reconcilePool } from "./reconcile-pool.ts";
import { reconcileTemplate } from "./reconcile-template.ts";

export interface TickOptions {
  /** The tick period; each pool's run starts at a random offset in [0, jitter × period). */
  periodMs: number;
  jitter: number;
  /** At most this many pools (and Envs) reconcile at once. */
  concurrency: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** namespace limits the tick to one namespace's pools and Envs (a namespace-scoped deployment). */
  namespace?: string;
  /** run replaces reconcilePool (the Node host routes it through its PoolRunner). */
  run?: (namespace: string, name: string, snapshot: PoolSnapshot) => Promise<PoolReport | undefined>;
  /**
   * pods, when given, is a watch-fed view of the pool pods (PoolPodsView): the tick plans from it
   * instead of listing every pod (ADR 0035).
   */
  pods?: TickPods;
  /** runEnv replaces reconcileEnv (the Node host routes it through its runner). */
  runEnv?: (namespace: string, name: string, snapshot: EnvSnapshot) => Promise<EnvReport | undefined>;
}

/** TickPods is where a tick takes the pool pods from instead of listing them (PoolPodsView). */
export interface TickPods {
  /** all is every pool pod; undefined (the view is not in step): the tick lists them. */
  all(): V1Pod[] | undefined;
  /**
   * of is one pool's pods (those labelled with it) as the view holds them when the pool's run
   * starts, a fifth of a period after the tick began at most; undefined: the run keeps the tick's.
   */
  of(namespace: string, pool: string): V1Pod[] | undefined;
}

/** TickReport summarises one pass over every pool and Env. */
export interface TickReport {
  pools: number;
  envs: number;
  /** templates whose status was reconciled (none in a namespace's tick, or when none was listed). */
  templates: number;
  failed: number;
  writes: number;
  requests: number;
  ms: number;
  /** readMs is the part of ms spent reading the cluster (the lists), before any run. */
  readMs: number;
  /** podsFromView: the pods came from the watch-fed view (opts.pods), not from a list. */
  podsFromView: boolean;
  /** envsSkipped says why the Envs were not reconciled (no local cluster ID), when they were not. */
  envsSkipped?: string;
}

/**
 * tick is the safety net behind the audit path: it reads every pool with its pods, and every Env,
 * in a few list requests (readCluster), reconciles each pool and each Env once from that
 * snapshot, finalizes the deleted pods of pools that are gone (readCluster's orphans), writes the
 * status of each template it listed (reconcileTemplate, from the same pools: only in a tick over
 * every namespace, since a template's pools may be in any), and, when the host adopts legacy
 * pools, gives each standalone pool its Env. Start offsets are spread
 * over a fifth of the period by default, so a fleet does not hit the API server in lockstep and
 * each object's effective period varies within ±20 %. The caller (croner in Node, the cron
 * trigger in Workers) prevents overlapping ticks. Without a local cluster ID the Envs are
 * skipped (the report says why) and the pools still run.
 */
export async function tick(deps: HostDeps, opts: TickOptions): Promise<TickReport> {
  const started = Date.now();
  const before = { ...deps.kube.requests };
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const run =
    opts.run ??
    ((ns: string, name: string, snapshot: PoolSnapshot) =>
      reconcilePool(deps, ns, name, RECONCILE, snapshot));
  const runEnv =
    opts.runEnv ??
    ((ns: string, name: string, snapshot: EnvSnapshot) => reconcileEnv(deps, ns, name, snapshot));
  const viewed = opts.pods?.all();
  const cluster = await readCluster(
    deps.kube,
    opts.namespace,
    deps.clusterId,
    () => readInstanceTypes(deps),
    viewed,
  );
  const readMs = Date.now() - started;
  const limit = pLimit(Math.max(1, opts.concurrency));
  let failed = 0;
  let writes = 0;
  const count = (outcomes: readonly { result: string }[]) => {
    writes += outcomes.filter((o) => o.result === "done").length;
  };
  // Each object's offset is slept outside the limiter, so waiting never holds a concurrency slot.
  const spread = (key: string, work: () => Promise<void>) =>
    sleep(Math.floor(random() * opts.jitter * opts.periodMs)).then(() =>
      limit(async () => {
        try {
          await work();
        } catch (e) {
          failed++;
          deps.log.warn({ target: key, err: String(e) }, "tick: reconcile failed");
        }
      }),
    );
  const pools = [...cluster.pools.entries()].map(([key, snapshot]) =>
    spread(key, async () => {
      const namespace = snapshot.pool.metadata?.namespace ?? "";
      const name = snapshot.pool.metadata?.name ?? "";
      // From the view: the pool's pods as they are now, not as they were when the tick began.
      const now = viewed ? opts.pods?.of(namespace, name) : undefined;
      const report = await run(namespace, name, now ? withPods(snapshot, now) : snapshot);
      for (const s of report?.steps ?? []) count(s.outcomes);
    }),
  );
  const envs = cluster.envs.map((snapshot) => {
    const { namespace = "", name = "" } = snapshot.env.metadata ?? {};
    return spread(`${namespace}/${name}`, async () =>
      count((await runEnv(namespace, name, snapshot))?.outcomes ?? []),
    );
  });
  const allPools = [...cluster.pools.values()].map((s) => s.pool);
  const templates = opts.namespace === undefined ? (cluster.templates ?? []) : [];
  const templateRuns = templates.map((template) => {
    const name = template.metadata?.name ?? "";
    return spread(`template ${name}`, async () =>
      count((await reconcileTemplate(deps, name, { template, pools: allPools })).outcomes),
    );
  });
  // Pods of pools that are gone have no pool run: the tick lets those being deleted go (record
  // first, then our finalizer), as the pool's finalize-deleted step would have.
  const orphans = cluster.orphans.length
    ? spread("orphaned pool pods", async () =>
        count(await execute(deps, planFinalizeDeleted(cluster.orphans, deps.now()))),
      )
    : Promise.resolve();
  // Sandbox egress policies no pod is fenced by any more (a create that never claimed, a replaced
  // pod): the pods just read spare the live ones a read (sweepEgressPolicies).
  const knownPods = viewed ?? [...cluster.pools.values()].flatMap((s) => s.pods);
  const egress = spread("egress policies", async () => {
    writes += (await sweepEgressPolicies(deps, opts.namespace, knownPods)).deleted.length;
  });
  // Paused sandboxes (ADR 0045): pauses and resumes whose caller is gone, retention, leftovers.
  const snapshots = spread("sandbox snapshots", async () => {
    writes += (await sweepSnapshots(deps, opts.namespace, knownPods)).writes;
  });
  if (deps.adoptPools && deps.clusterId) {
    const adoptions = planAdoption(allPools, cluster.allEnvs, deps.clusterId);
    if (adoptions.length) count(await execute(deps, adoptions));
  }
  await Promise.all([...pools, ...envs, ...templateRuns, orphans, egress, snapshots]);
  const requests = Object.entries(deps.kube.requests).reduce(
    (sum, [method, n]) => sum + n - (before[method as keyof typeof before] ?? 0),
    0,
  );
  return {
    pools: cluster.pools.size,
    envs: cluster.envs.length,
    templates: templates.length,
    failed,
    writes,
    requests,
    ms: Date.now() - started,
    readMs,
    podsFromView: viewed !== undefined,
    ...(!deps.clusterId && cluster.allEnvs.length > 0
      ? {
          envsSkipped: `${cluster.allEnvs.length} SandboxEnv(s) not reconciled: no local cluster ID is configured`,
        }
      : {}),
  };
}

/** withPods is a pool's snapshot with other pods of it (those labelled with it), split by ownership. */
function withPods(snapshot: PoolSnapshot, pods: readonly V1Pod[]): PoolSnapshot {
  const { foreign: _, ...rest } = snapshot;
  const { owned, foreign } = partitionPods(snapshot.pool, pods);
  return { ...rest, pods: owned, ...(foreign.length > 0 ? { foreign } : {}) };
}
