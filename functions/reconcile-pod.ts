import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../lib/api/sandbox-pool.ts";
import { orMissing } from "../lib/kube/errors.ts";
import type { PodTarget } from "../lib/triggers/audit-targets.ts";
import { completeStarting } from "./complete-starting.ts";
import { completeStopping } from "./complete-stopping.ts";
import type { StepDeps } from "./deps.ts";
import { execute } from "./execute.ts";
import { finalizeDeleted } from "./finalize-deleted.ts";
import { handleFailures } from "./handle-failures.ts";
import type { PoolReport } from "./reconcile-pool.ts";
import { runPostStartHooks } from "./run-post-start-hooks.ts";
import type { Step } from "./step.ts";

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
 * least that new, the pool as cached (a pool change triggers its own runs).
 */
export async function reconcilePod(
  deps: StepDeps,
  namespace: string,
  poolName: string,
  podName: string,
  target: PodTarget = { notOlderThan: undefined },
): Promise<PoolReport> {
  const cached = target.notOlderThan !== undefined;
  const [pool, pod] = await Promise.all([
    orMissing(deps.kube.getPool(namespace, poolName, { cached })),
    orMissing<V1Pod>(deps.kube.getPod(namespace, podName, { notOlderThan: target.notOlderThan })),
  ]);
  if (!pool || !pod) return { pool: `${namespace}/${poolName}`, found: false, steps: [] };
  return runPodSteps(deps, pool, pod);
}

/**
 * runPodSteps runs the per-pod steps on one version of a pod the caller holds: a fresh read
 * (reconcilePod) or a version a watch just delivered (a create waiting for its sandbox to run).
 * Every write is preconditioned on that version, so a version that is already stale costs a
 * conflict, never a transition made twice.
 */
export async function runPodSteps(deps: StepDeps, pool: SandboxPool, pod: V1Pod): Promise<PoolReport> {
  const report: PoolReport = {
    pool: `${pool.metadata?.namespace}/${pool.metadata?.name}`,
    found: true,
    steps: [],
  };
  for (const step of POD_STEPS) {
    const outcomes = await execute(deps, await step.plan(deps, { pool, pods: [pod] }));
    if (outcomes.length) report.steps.push({ step: step.name, outcomes });
  }
  return report;
}
