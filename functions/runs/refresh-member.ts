import { planMemberRefresh } from "../../lib/env/refresh-member.ts";
import type { HostDeps } from "../host-deps.ts";
import { withCatalog } from "../instance-types.ts";
import { readEnvSnapshot } from "../steps/env-snapshot.ts";
import { type ActionOutcome, execute } from "../steps/execute.ts";
import { NotFound, StepRefused } from "../steps/step.ts";
import { clusterIdOf } from "./reconcile-env.ts";

/** MemberRefreshReport says what one refresh did: its writes (none: the member was there already). */
export interface MemberRefreshReport {
  env: string;
  member: string;
  note: string;
  outcomes: ActionOutcome[];
}

/**
 * refreshMember re-renders one Env member from its template's current revision, on an operator's
 * request (never in a reconcile: seed 002 says template upgrades do not reach existing members
 * otherwise), deciding on a fresh read of the Env (planMemberRefresh) and writing the pool under a
 * resourceVersion test; its pool's runs then roll the pods (ADR 0031). An unknown Env or member
 * throws NotFound, a refusal StepRefused with the reason.
 */
export async function refreshMember(
  deps: HostDeps,
  namespace: string,
  env: string,
  member: string,
): Promise<MemberRefreshReport> {
  const clusterId = clusterIdOf(deps);
  const read = await readEnvSnapshot(deps.kube, namespace, env, clusterId);
  if (!read) throw new NotFound(`SandboxEnv "${namespace}/${env}" does not exist`);
  const plan = planMemberRefresh(await withCatalog(deps, read), member, clusterId);
  if (!plan.ok) throw plan.missing ? new NotFound(plan.reason) : new StepRefused(plan.reason);
  const outcomes = await execute(deps, plan.actions);
  const report = { env: `${namespace}/${env}`, member, note: plan.note, outcomes };
  for (const o of outcomes) {
    if (o.result === "error") deps.log.warn({ env: report.env, target: o.target, err: o.error }, o.why);
    else deps.log.info({ env: report.env, target: o.target, result: o.result }, o.why);
  }
  return report;
}
