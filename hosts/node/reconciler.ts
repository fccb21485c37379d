import { Cron } from "croner";
import { PoolPodsView } from "../../functions/cache/pool-pods-view.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { envsToRun, poolsSpecWritten } from "../../functions/runs/env-triggers.ts";
import { PoolRunner } from "../../functions/runs/pool-runner.ts";
import { type EnvReport, reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { reconcilePod } from "../../functions/runs/reconcile-pod.ts";
import { type PoolReport, RECONCILE, reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { reconcileTemplate } from "../../functions/runs/reconcile-template.ts";
import { type MemberRefreshReport, refreshMember } from "../../functions/runs/refresh-member.ts";
import { tick } from "../../functions/runs/tick.ts";
import { UsageSampler } from "../../functions/usage/usage-sampler.ts";
import type { EnvSnapshot } from "../../lib/env/plan-env.ts";
import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import type { EnvAuditTargets, PodKey, PodTarget, PoolKey } from "../../lib/triggers/audit-targets.ts";
import { PoolRunVersions, READ_AFRESH } from "../../lib/triggers/pool-run-versions.ts";

/** POOL_RUN_INTERVAL_MS spaces one pool's (or Env's) back-to-back whole runs in this process. */
const POOL_RUN_INTERVAL_MS = 1000;

/**
 * VIEW_CATCH_UP_MS bounds how long a pool's audit-triggered run waits for the pool pods view to pass
 * the versions the events reported before it lists instead (ADR 0039): about one run's spacing.
 */
const VIEW_CATCH_UP_MS = 1000;

/**
 * FULL_LIST_MS: a tick that plans from the pool pods view (ADR 0035) still lists every pod itself
 * once this long after its last list, the safety net for a view that would be out of step unnoticed.
 */
export const FULL_LIST_MS = 60_000;

/** AuditWork is what one audit batch asks the reconciler to run. */
export interface AuditWork {
  pods: readonly (readonly [PodKey, PodTarget])[];
  pools: readonly PoolKey[];
  envs: EnvAuditTargets;
}

/** Reconciler runs the reconcile steps of one Node host: audit-triggered, ticked and manual. */
export interface Reconciler {
  /** audit starts the per-pod steps of written pods and the whole runs of touched pools and Envs. */
  audit(work: AuditWork): void;
  /** run runs one step (or RECONCILE: all) for a pool now and reports what it did. */
  run(step: string, namespace: string, pool: string): Promise<PoolReport>;
  /** runEnv runs the Env step for one Env now and reports what it did. */
  runEnv(namespace: string, env: string): Promise<EnvReport>;
  /** refreshMember re-renders one Env member from its template's current revision now (manual only). */
  refreshMember(namespace: string, env: string, member: string): Promise<MemberRefreshReport>;
  /** idle resolves when no run is in flight (for shutdown, tests and benchmarks). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface ReconcilerOptions {
  /** Tick period in seconds; 0 turns the tick off (audit events and manual triggers only). */
  tickSeconds: number;
  tickConcurrency: number;
  /**
   * usageSampleSeconds: how often the sandboxes' resource use is sampled into the usage store
   * (UsageSampler; AGENTBOX_USAGE_SAMPLE_SECONDS, default 10); 0 or unset: never.
   */
  usageSampleSeconds?: number;
  /**
   * auditNamespacePrefix limits the Envs audit events may run to namespaces with this prefix, and
   * the templates (cluster-scoped) whose status they may write to names with it.
   */
  auditNamespacePrefix?: string;
}

/**
 * startReconciler runs the steps for one host: each written pod on a read of that pod (at once,
 * one run per pod at a time), each touched pool and Env whole (at most about once a second each,
 * ADR 0007), and the croner tick as the safety net for anything the audit path missed. Given a
 * watch transport, the tick plans from a watch-fed view of the pool pods (PoolPodsView) instead of
 * listing them every period, and lists them itself once every FULL_LIST_MS (ADR 0035); so does a
 * pool's audit-triggered run, once the view has passed the versions the events reported (ADR 0039).
 */
export function startReconciler(
  deps: HostDeps,
  options: ReconcilerOptions,
  watch?: KubeWatchTransport,
): Reconciler {
  const periodMs = options.tickSeconds * 1000;
  const view = options.tickSeconds > 0 && watch ? new PoolPodsView({ ...deps, watch }) : undefined;
  const versions = new PoolRunVersions();
  // Whole-pool runs (pool writes, pod writes, ticks) at most about once a second per pool. One
  // without the tick's snapshot plans from the view once it has passed the versions the audit
  // events reported (ADR 0039), or else lists every pod of the pool. A written pod's own
  // transitions run at once on a read of that pod.
  const pools = new PoolRunner(
    async (key, snapshot) => {
      const [ns = "", name = ""] = key.split("/");
      const wanted = versions.take(key);
      const fromView =
        !snapshot &&
        view !== undefined &&
        wanted !== READ_AFRESH &&
        (wanted === undefined || (await view.caughtUp(wanted, VIEW_CATCH_UP_MS)));
      const viewed = fromView ? view?.podsOf(ns, name) : undefined;
      return reconcilePool(deps, ns, name, RECONCILE, snapshot, viewed);
    },
    deps.log,
    POOL_RUN_INTERVAL_MS,
  );
  const pods = new PoolRunner<PodTarget>(async (key, target) => {
    const [ns = "", pool = "", pod = ""] = key.split("/");
    return reconcilePod(deps, ns, pool, pod, target);
  }, deps.log);
  // A pool whose spec an Env run wrote (replicas the autoscaler raised) runs at once: its audit
  // event would wait for the pool's spacing, and a waking Env's creates wait for those pods.
  const envs = new PoolRunner<EnvSnapshot>(
    async (key, snapshot) => {
      const [ns = "", name = ""] = key.split("/");
      const report = await reconcileEnv(deps, ns, name, snapshot);
      for (const pool of poolsSpecWritten(report.outcomes)) void pools.trigger(pool, undefined, true);
      return report;
    },
    deps.log,
    POOL_RUN_INTERVAL_MS,
  );
  // A written template's status (its pools' state reaches it at the next tick), one run at a time
  // per template; keyed "templates/<name>" (templates have no namespace).
  const templates = new PoolRunner<undefined>(
    (key) => reconcileTemplate(deps, key.slice("templates/".length)),
    deps.log,
    POOL_RUN_INTERVAL_MS,
  );
  // A host without a cluster ID says once why its Envs stay untouched, not on every tick.
  let saidEnvsSkipped = false;
  let listedAt = Number.NEGATIVE_INFINITY;
  /** podsForTick: the view, except once every FULL_LIST_MS, when the tick lists (all: undefined). */
  const podsForTick = view && {
    all: () => {
      const now = Date.now();
      const viewed = now - listedAt < FULL_LIST_MS ? view.snapshot() : undefined;
      if (!viewed) listedAt = now;
      return viewed;
    },
    of: (namespace: string, pool: string) => view.podsOf(namespace, pool),
  };
  const cron =
    options.tickSeconds > 0
      ? new Cron("* * * * * *", { interval: options.tickSeconds, protect: true }, async () => {
          const started = performance.now();
          const report = await tick(deps, {
            periodMs,
            jitter: 0.2,
            concurrency: options.tickConcurrency,
            ...(podsForTick ? { pods: podsForTick } : {}),
            run: async (ns, name, snapshot) => {
              await pools.trigger(`${ns}/${name}`, snapshot);
              return undefined;
            },
            runEnv: async (ns, name, snapshot) => {
              await envs.trigger(`${ns}/${name}`, snapshot);
              return undefined;
            },
          }).catch((err: unknown) => {
            deps.log.warn({ err: String(err) }, "tick failed");
            return undefined;
          });
          deps.metrics?.tickDuration.observe((performance.now() - started) / 1000);
          if (report) deps.metrics?.tickLastSuccess.set(Date.now() / 1000);
          if (report?.envsSkipped && !saidEnvsSkipped) {
            saidEnvsSkipped = true;
            deps.log.error(
              { why: report.envsSkipped },
              "SandboxEnvs are not reconciled: set AGENTBOX_CLUSTER_ID",
            );
          }
          if (report) deps.log.debug({ ...report }, "tick");
        })
      : undefined;
  // The sandboxes' resource use, on its own period (not the tick's: the tick may be off), from
  // the tick's view of the pool pods when there is one.
  const usageSeconds = options.usageSampleSeconds ?? 0;
  const sampler =
    usageSeconds > 0 && deps.usage
      ? new UsageSampler(deps, {
          periodSeconds: usageSeconds,
          ...(view ? { pods: () => view.snapshot() } : {}),
        })
      : undefined;
  // sampling is the sample in flight: close() waits for it, as the usage store (the history's
  // database) is closed right after, and a put must not land on a closed database.
  let sampling: Promise<void> | undefined;
  const usageCron = sampler
    ? new Cron("* * * * * *", { interval: usageSeconds, protect: true }, async () => {
        sampling = sampler.sample().then(
          (report) => deps.log.debug({ ...report }, "usage sample"),
          (err: unknown) => deps.log.warn({ err: String(err) }, "usage sampling failed"),
        );
        await sampling;
      })
    : undefined;
  const auditEnvs = async (targets: EnvAuditTargets) => {
    const clusterId = deps.clusterId;
    if (!clusterId) return;
    const prefix = options.auditNamespacePrefix ?? "";
    for (const { key, urgent } of await envsToRun(deps.kube, targets, clusterId))
      if (key.startsWith(prefix)) void envs.trigger(key, undefined, urgent);
  };
  const idle = async () => {
    await pods.idle();
    await pools.idle();
    await envs.idle();
    await templates.idle();
  };
  return {
    audit: (work) => {
      versions.note(work.pods);
      for (const [key, target] of work.pods) void pods.trigger(key, target);
      for (const key of work.pools) void pools.trigger(key);
      const { envs: direct, pools: written, templates: changed } = work.envs;
      const prefix = options.auditNamespacePrefix ?? "";
      for (const name of changed) if (name.startsWith(prefix)) void templates.trigger(`templates/${name}`);
      if (direct.length + written.length + changed.length > 0)
        auditEnvs(work.envs).catch((err: unknown) =>
          deps.log.warn({ err: String(err) }, "audit: cannot find the Envs to run"),
        );
    },
    run: (step, namespace, pool) => reconcilePool(deps, namespace, pool, step),
    runEnv: (namespace, env) => reconcileEnv(deps, namespace, env),
    refreshMember: (namespace, env, member) => refreshMember(deps, namespace, env, member),
    idle,
    close: async () => {
      cron?.stop();
      usageCron?.stop();
      view?.close();
      await sampling;
      await idle();
    },
  };
}
