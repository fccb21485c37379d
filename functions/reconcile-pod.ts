import type { V1Pod } from "@kubernetes/client-node";
import { orMissing } from "../lib/kube/errors.ts";
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
 * listing the whole pool; the pool-wide steps follow on the (rate-limited) pool run.
 */
export async function reconcilePod(
  deps: StepDeps,
  namespace: string,
  poolName: string,
  podName: string,
): Promise<PoolReport> {
  const report: PoolReport = { pool: `${namespace}/${poolName}`, found: false, steps: [] };
  const [pool, pod] = await Promise.all([
    orMissing(deps.kube.getPool(namespace, poolName)),
    orMissing<V1Pod>(deps.kube.getPod(namespace, podName)),
  ]);
  if (!pool || !pod) return report;
  report.found = true;
  for (const step of POD_STEPS) {
    const outcomes = await execute(deps, await step.plan(deps, { pool, pods: [pod] }));
    if (outcomes.length) report.steps.push({ step: step.name, outcomes });
  }
  return report;
}
