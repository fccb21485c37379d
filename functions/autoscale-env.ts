import type { SandboxEnv } from "../lib/api/sandbox-env.ts";
import { type GroupChange, planAutoscale } from "../lib/autoscale/plan-autoscale.ts";
import type { EnvSnapshot } from "../lib/env/plan-env.ts";
import type { StepDeps } from "./deps.ts";
import { type ActionOutcome, execute, executeOne } from "./execute.ts";

/** AutoscaleReport says what one autoscaler run did, and the Env to go on from. */
export interface AutoscaleReport {
  outcomes: ActionOutcome[];
  changes: GroupChange[];
  /** env is the Env after the run's replicas patch; undefined when that patch lost a race. */
  env: SandboxEnv | undefined;
}

/**
 * autoscaleEnv is the autoscaler step of an Env run: decide every enabled group from the
 * snapshot (planAutoscale), write the members' replicas on the Env under its resourceVersion, and
 * only once that landed (or none was needed) the pools' status.autoscaling. A run that loses the
 * Env write to a racing run writes nothing more, so a scale step is never taken twice.
 */
export async function autoscaleEnv(
  deps: StepDeps,
  snap: EnvSnapshot,
  clusterId: string,
): Promise<AutoscaleReport> {
  const plan = planAutoscale(snap, clusterId, deps.now());
  const report: AutoscaleReport = { outcomes: [], changes: plan.changes, env: snap.env };
  if (plan.envWrite) {
    const { outcome, written } = await executeOne(deps, plan.envWrite);
    report.outcomes.push(outcome);
    if (outcome.result !== "done") return { ...report, env: undefined };
    report.env = (written as SandboxEnv | undefined) ?? snap.env;
  }
  report.outcomes.push(...(await execute(deps, plan.poolWrites)));
  return report;
}
