import { Cron } from "croner";
import type { StepDeps } from "../../functions/deps.ts";
import { PoolRunner } from "../../functions/pool-runner.ts";
import { reconcilePod } from "../../functions/reconcile-pod.ts";
import { type PoolReport, RECONCILE, reconcilePool } from "../../functions/reconcile-pool.ts";
import { tick } from "../../functions/tick.ts";
import type { PodKey, PodTarget, PoolKey } from "../../lib/triggers/audit-targets.ts";

/** POOL_RUN_INTERVAL_MS spaces one pool's back-to-back whole-pool runs in this process. */
const POOL_RUN_INTERVAL_MS = 1000;

/** Reconciler runs the reconcile steps of one Node host: audit-triggered, ticked and manual. */
export interface Reconciler {
  /** audit starts the per-pod steps of written pods and the whole runs of touched pools. */
  audit(pods: readonly (readonly [PodKey, PodTarget])[], pools: readonly PoolKey[]): void;
  /** run runs one step (or RECONCILE: all) for a pool now and reports what it did. */
  run(step: string, namespace: string, pool: string): Promise<PoolReport>;
  /** idle resolves when no run is in flight (for shutdown, tests and benchmarks). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface ReconcilerOptions {
  /** Tick period in seconds; 0 turns the tick off (audit events and manual triggers only). */
  tickSeconds: number;
  tickConcurrency: number;
}

/**
 * startReconciler runs the steps for one host: each written pod on a read of that pod (at once,
 * one run per pod at a time), each touched pool whole (at most about once a second, ADR 0007),
 * and the croner tick as the safety net for anything the audit path missed.
 */
export function startReconciler(deps: StepDeps, options: ReconcilerOptions): Reconciler {
  // Whole-pool runs (pool writes, pod writes, ticks) at most about once a second per pool: each
  // lists every pod of the pool. A written pod's own transitions run at once on a read of that pod.
  const pools = new PoolRunner(
    async (key, snapshot) => {
      const [ns = "", name = ""] = key.split("/");
      return reconcilePool(deps, ns, name, RECONCILE, snapshot);
    },
    deps.log,
    POOL_RUN_INTERVAL_MS,
  );
  const pods = new PoolRunner<PodTarget>(async (key, target) => {
    const [ns = "", pool = "", pod = ""] = key.split("/");
    return reconcilePod(deps, ns, pool, pod, target);
  }, deps.log);
  const periodMs = options.tickSeconds * 1000;
  const cron =
    options.tickSeconds > 0
      ? new Cron("* * * * * *", { interval: options.tickSeconds, protect: true }, async () => {
          const report = await tick(deps, {
            periodMs,
            jitter: 0.2,
            concurrency: options.tickConcurrency,
            run: async (ns, name, snapshot) => {
              await pools.trigger(`${ns}/${name}`, snapshot);
              return undefined;
            },
          }).catch((err: unknown) => {
            deps.log.warn({ err: String(err) }, "tick failed");
            return undefined;
          });
          if (report) deps.log.debug({ ...report }, "tick");
        })
      : undefined;
  const idle = async () => {
    await pods.idle();
    await pools.idle();
  };
  return {
    audit: (podTargets, poolKeys) => {
      for (const [key, target] of podTargets) void pods.trigger(key, target);
      for (const key of poolKeys) void pools.trigger(key);
    },
    run: (step, namespace, pool) => reconcilePool(deps, namespace, pool, step),
    idle,
    close: async () => {
      cron?.stop();
      await idle();
    },
  };
}
