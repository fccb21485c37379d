import pLimit from "p-limit";
import type { StepDeps } from "./deps.ts";
import { type PoolReport, RECONCILE, reconcilePool } from "./reconcile-pool.ts";
import { type PoolSnapshot, readAllSnapshots } from "./snapshot.ts";

export interface TickOptions {
  /** The tick period; each pool's run starts at a random offset in [0, jitter × period). */
  periodMs: number;
  jitter: number;
  /** At most this many pools reconcile at once. */
  concurrency: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** namespace limits the tick to one namespace's pools (a namespace-scoped deployment). */
  namespace?: string;
  /** run replaces reconcilePool (the Node host routes it through its PoolRunner). */
  run?: (namespace: string, name: string, snapshot: PoolSnapshot) => Promise<PoolReport | undefined>;
}

/** TickReport summarises one pass over every pool. */
export interface TickReport {
  pools: number;
  failed: number;
  writes: number;
  requests: number;
  ms: number;
}

/**
 * tick is the safety net behind the audit path: it reads every pool with its pods in a few list
 * requests (readAllSnapshots) and reconciles each pool once from that snapshot.
 * Start offsets are spread over a fifth of the period by default, so a fleet of pools does not hit
 * the API server in lockstep and each pool's effective period varies within ±20 %. The caller
 * (croner in Node, the cron trigger in Workers) prevents overlapping ticks.
 */
export async function tick(deps: StepDeps, opts: TickOptions): Promise<TickReport> {
  const started = Date.now();
  const before = { ...deps.kube.requests };
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const run =
    opts.run ??
    ((ns: string, name: string, snapshot: PoolSnapshot) =>
      reconcilePool(deps, ns, name, RECONCILE, snapshot));
  const snapshots = await readAllSnapshots(deps.kube, opts.namespace);
  const pools = [...snapshots.values()].map((s) => s.pool);
  const limit = pLimit(Math.max(1, opts.concurrency));
  let failed = 0;
  let writes = 0;
  await Promise.all(
    pools.map(async (pool) => {
      // The offset is slept outside the limiter, so waiting never holds a concurrency slot.
      await sleep(Math.floor(random() * opts.jitter * opts.periodMs));
      await limit(async () => {
        try {
          const key = `${pool.metadata?.namespace}/${pool.metadata?.name}`;
          const report = await run(
            pool.metadata?.namespace ?? "",
            pool.metadata?.name ?? "",
            snapshots.get(key)!,
          );
          for (const s of report?.steps ?? []) writes += s.outcomes.filter((o) => o.result === "done").length;
        } catch (e) {
          failed++;
          deps.log.warn(
            { pool: `${pool.metadata?.namespace}/${pool.metadata?.name}`, err: String(e) },
            "tick: reconcile failed",
          );
        }
      });
    }),
  );
  const requests = Object.entries(deps.kube.requests).reduce(
    (sum, [method, n]) => sum + n - (before[method as keyof typeof before] ?? 0),
    0,
  );
  return { pools: pools.length, failed, writes, requests, ms: Date.now() - started };
}
