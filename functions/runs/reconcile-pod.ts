import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { isTerminating } from "../../lib/kube/action.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { hasPendingHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import { orphanedFrom, ownedBy } from "../../lib/membership/pod-ownership.ts";
import { planFinalizeDeleted } from "../../lib/reconcile/finalize-deleted.ts";
import type { PodTarget } from "../../lib/triggers/audit-targets.ts";
import type { HostDeps } from "../host-deps.ts";
import { completeStarting } from "../steps/complete-starting.ts";
import { completeStopping } from "../steps/complete-stopping.ts";
import { execute } from "../steps/execute.ts";
import { finalizeDeleted } from "../steps/finalize-deleted.ts";
import { handleFailures } from "../steps/handle-failures.ts";
import { runPostStartHooks } from "../steps/run-post-start-hooks.ts";
import type { Step } from "../steps/step.ts";
import type { PoolReport } from "./reconcile-pool.ts";

/** POD_STEPS are the steps that decide about each pod on its own (the pool-wide ones need every pod). */
export const POD_STEPS: readonly Step[] = [
  finalizeDeleted,
  handleFailures,
  completeStarting,
  runPostStartHooks,
  completeStopping,
];

/**
 * reconcilePod runs the per-pod steps for one pod, read fresh with its pool (two reads, whatever
 * the pool's size). The audit path uses it for pod writes, so a claim's start completes without
 * listing the whole pool; the pool-wide steps follow on the (rate-limited) pool run. With a
 * version an audit event reported, both reads come from the apiserver's watch cache: the pod at
 * least that new, the pool as cached (a pool change triggers its own runs), shared by this
 * process's runs for a moment when deps.poolReads is set.
 *
 * When the event recorded the pod whole (target.reported), the steps first plan on that version
 * and the pod is read only if they would act: most writes (our own claims, releases and
 * completions) leave nothing to do, and acting is always on a fresh read. A later write to the
 * pod has its own event and run, so looking at this version alone loses nothing.
 *
 * Only a pod the pool owns (ownedBy) gets the steps; a foreign one is left alone (the pool run
 * reports it). A pod whose pool is gone (orphanedFrom: no pool run will come) is let go when it is
 * being deleted: its record stored, then our finalizer removed (finalizeOrphan).
 */
export async function reconcilePod(
  deps: HostDeps,
  namespace: string,
  poolName: string,
  podName: string,
  target: PodTarget = { notOlderThan: undefined },
): Promise<PoolReport> {
  const cached = target.notOlderThan !== undefined;
  const readPool = () => orMissing(deps.kube.getPool(namespace, poolName, { cached }));
  const pooled =
    cached && deps.poolReads ? deps.poolReads.get(`${namespace}/${poolName}`, readPool) : readPool();
  const nothing = (found: boolean): PoolReport => ({ pool: `${namespace}/${poolName}`, found, steps: [] });
  if (target.reported) {
    const pool = await pooled;
    const reported = target.reported;
    if (pool && ownedBy(reported, pool)) {
      if (await plansNothing(deps, pool, reported)) return nothing(true);
    } else if (!orphanedFrom(reported, pool) || !isTerminating(reported)) return nothing(pool !== undefined);
  }
  const [pool, pod] = await Promise.all([
    pooled,
    orMissing<V1Pod>(deps.kube.getPod(namespace, podName, { notOlderThan: target.notOlderThan })),
  ]);
  if (pod && pool && ownedBy(pod, pool)) return runPodSteps(deps, pool, pod);
  if (pod && orphanedFrom(pod, pool)) return finalizeOrphan(deps, nothing(pool !== undefined), pod);
  return nothing(pool !== undefined && pod !== undefined);
}

/**
 * finalizeOrphan lets a pod of a pool that is gone go once it is being deleted, as finalize-deleted
 * does for a pool's own pods: a claimed pod's record first (idempotent by sandbox ID), then the
 * removal of our finalizer, tested against the version read.
 */
async function finalizeOrphan(deps: HostDeps, report: PoolReport, pod: V1Pod): Promise<PoolReport> {
  const outcomes = await execute(deps, planFinalizeDeleted([pod], deps.now()));
  return outcomes.length ? { ...report, steps: [{ step: "finalize-deleted", outcomes }] } : report;
}

/**
 * plansNothing says whether the per-pod steps would leave this version of the pod alone. A pod
 * with hooks still to run counts as work: planning the hooks step runs them.
 */
async function plansNothing(deps: HostDeps, pool: SandboxPool, pod: V1Pod): Promise<boolean> {
  if (hasPendingHooks(pod)) return false;
  for (const step of POD_STEPS) if ((await step.plan(deps, { pool, pods: [pod] })).length > 0) return false;
  return true;
}

/**
 * runPodSteps runs the per-pod steps on one version of a pod the pool owns (any other is left
 * alone) the caller holds: a fresh read
 * (reconcilePod) or a version a watch just delivered (a create waiting for its sandbox to run:
 * asWaiter, so it completes the start the reconcile runs leave to it, ADR 0022).
 * Every write is preconditioned on that version, so a version that is already stale costs a
 * conflict, never a transition made twice.
 */
export async function runPodSteps(
  deps: HostDeps,
  pool: SandboxPool,
  pod: V1Pod,
  asWaiter = false,
): Promise<PoolReport> {
  const report: PoolReport = {
    pool: `${pool.metadata?.namespace}/${pool.metadata?.name}`,
    found: true,
    steps: [],
  };
  if (!ownedBy(pod, pool)) return report; // not the pool's: never acted on (see ownedBy)
  for (const step of POD_STEPS) {
    const outcomes = await execute(
      deps,
      await step.plan(deps, { pool, pods: [pod], ...(asWaiter ? { waiter: true } : {}) }),
    );
    if (outcomes.length) report.steps.push({ step: step.name, outcomes });
  }
  return report;
}
