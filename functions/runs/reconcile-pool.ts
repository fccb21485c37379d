import type { V1Pod } from "@kubernetes/client-node";
import { poolGauges, setPoolGauges } from "../../lib/metrics/pool-gauges.ts";
import type { HostDeps } from "../host-deps.ts";
import { completeStarting } from "../steps/complete-starting.ts";
import { completeStopping } from "../steps/complete-stopping.ts";
import { copyTemplate } from "../steps/copy-template.ts";
import { execute } from "../steps/execute.ts";
import { finalizeDeleted } from "../steps/finalize-deleted.ts";
import { handleFailures } from "../steps/handle-failures.ts";
import { idleRelease } from "../steps/idle-release.ts";
import { materialisePool } from "../steps/materialise-pool.ts";
import { pauseExpired } from "../steps/pause-expired.ts";
import { refreshTemplate } from "../steps/refresh-template.ts";
import { releaseExpired } from "../steps/release-expired.ts";
import { reportForeignPods } from "../steps/report-foreign-pods.ts";
import { runPostStartHooks } from "../steps/run-post-start-hooks.ts";
import { type PoolSnapshot, readSnapshot } from "../steps/snapshot.ts";
import type { Step, StepResult } from "../steps/step.ts";
import { updateStatus } from "../steps/update-status.ts";

/**
 * STEPS in the order a full reconcile runs them: the template copy a pool still lacks (nothing
 * else may act on a pool without its pod template), records and releases (they free pods), then
 * transitions, then the pod count, the foreign pods' Warnings, then the status that describes the
 * result. Every step plans from the pods the pool owns (the snapshot's pods); foreign ones are
 * only reported.
 */
export const STEPS: readonly Step[] = [
  copyTemplate,
  finalizeDeleted,
  handleFailures,
  idleRelease,
  pauseExpired,
  releaseExpired,
  completeStarting,
  runPostStartHooks,
  completeStopping,
  materialisePool,
  reportForeignPods,
  updateStatus,
];

/** MANUAL_STEPS run only when an operator names them (never as part of RECONCILE). */
export const MANUAL_STEPS: readonly Step[] = [refreshTemplate];

/** RECONCILE names the pseudo-step that runs all of STEPS. */
export const RECONCILE = "reconcile";

/** STEP_NAMES are the names the manual triggers accept: RECONCILE, then every step. */
export const STEP_NAMES: readonly string[] = [RECONCILE, ...[...STEPS, ...MANUAL_STEPS].map((s) => s.name)];

/** PoolReport says what one run did to a pool. */
export interface PoolReport {
  pool: string;
  found: boolean;
  steps: StepResult[];
}

/**
 * reconcilePool reads the pool once (or takes the snapshot a tick just read; with `viewed`, the
 * pods a host's view holds instead of a list: readSnapshot) and runs the named
 * step, or every step, against that snapshot. Each write carries its own precondition, so running against one snapshot is safe: a
 * write that an earlier step made stale fails its test and is re-planned on the next trigger.
 */
export async function reconcilePool(
  deps: HostDeps,
  namespace: string,
  name: string,
  only = RECONCILE,
  snapshot?: PoolSnapshot,
  viewed?: readonly V1Pod[],
): Promise<PoolReport> {
  const report: PoolReport = { pool: `${namespace}/${name}`, found: false, steps: [] };
  const steps = only === RECONCILE ? STEPS : [...STEPS, ...MANUAL_STEPS].filter((s) => s.name === only);
  if (steps.length === 0) throw new RangeError(`unknown step "${only}"`);
  const snap = snapshot ?? (await readSnapshot(deps.kube, namespace, name, viewed));
  if (deps.metrics)
    setPoolGauges(deps.metrics, report.pool, snap ? poolGauges(snap.pool, snap.pods) : undefined);
  if (!snap) return report;
  report.found = true;
  for (const step of steps) {
    const outcomes = await execute(deps, await step.plan(deps, snap, report.steps));
    if (outcomes.length) report.steps.push({ step: step.name, outcomes });
    for (const o of outcomes) {
      if (o.result === "error")
        deps.log.warn({ pool: report.pool, step: step.name, target: o.target, err: o.error }, o.why);
      else if (o.result === "done")
        deps.log.info({ pool: report.pool, step: step.name, target: o.target }, o.why);
    }
  }
  return report;
}
