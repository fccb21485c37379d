import { type GroupChange, planAutoscale } from "../../lib/autoscale/plan-autoscale.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { EnvSnapshot } from "../../lib/env/plan-env.ts";
import type { HostDeps } from "../host-deps.ts";
import { type ActionOutcome, executeOne } from "../steps/execute.ts";

/** AutoscaleReport says what one autoscaler run did, and the Env to go on from. */
export interface AutoscaleReport {
  outcomes: ActionOutcome[];
  changes: GroupChange[];
  /** env is the Env after the run's replicas patch; undefined when that patch lost a race. */
  env: SandboxEnv | undefined;
  /** pools are the snapshot's pools, each as its bookkeeping write left it. */
  pools: SandboxPool[];
}

/**
 * autoscaleEnv is the autoscaler step of an Env run: decide every enabled group from the
 * snapshot (planAutoscale), write the members' replicas on the Env under its resourceVersion, and
 * only once that landed (or none was needed) the pools' status.autoscaling. A run that loses the
 * Env write to a racing run writes nothing more, so a scale step is never taken twice.
 */
export async function autoscaleEnv(
  deps: HostDeps,
  snap: EnvSnapshot,
  clusterId: string,
): Promise<AutoscaleReport> {
  const plan = planAutoscale(snap, clusterId, deps.now(), deps.autoscale);
  const report: AutoscaleReport = { outcomes: [], changes: plan.changes, env: snap.env, pools: snap.pools };
  if (plan.envWrite) {
    const { outcome, written } = await executeOne(deps, plan.envWrite);
    report.outcomes.push(outcome);
    if (outcome.result !== "done") return { ...report, env: undefined };
    report.env = (written as SandboxEnv | undefined) ?? snap.env;
    // Counted once the Env write landed: a decision a racing run overtook was not taken.
    for (const c of plan.changes)
      deps.metrics?.autoscalerDecisions.inc({ direction: c.direction, reason: c.reason });
  }
  // Each bookkeeping write moves its pool's resourceVersion: the Env step's patches in the same
  // run must be tested against the pool as written, not as read.
  const written = new Map<string, SandboxPool>();
  for (const action of plan.poolWrites) {
    const result = await executeOne(deps, action);
    report.outcomes.push(result.outcome);
    if (result.written) written.set(action.target.name, result.written as SandboxPool);
  }
  report.pools = snap.pools.map((p) => written.get(p.metadata?.name ?? "") ?? p);
  return report;
}
