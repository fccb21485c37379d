import { type EnvSnapshot, planEnv } from "../lib/env/plan-env.ts";
import type { StepDeps } from "./deps.ts";
import { readEnvSnapshot } from "./env-snapshot.ts";
import { type ActionOutcome, execute } from "./execute.ts";
import { Misconfigured } from "./step.ts";

/** EnvReport says what one Env run did. */
export interface EnvReport {
  env: string;
  found: boolean;
  outcomes: ActionOutcome[];
}

/** clusterIdOf is the host's local cluster ID, or the configuration error that says it is missing. */
export function clusterIdOf(deps: StepDeps): string {
  if (!deps.clusterId)
    throw new Misconfigured(
      "no local cluster ID is configured (AGENTBOX_CLUSTER_ID on the Node host, CLUSTER_ID on the Worker): the Env step materialises only the Env segment of its own cluster, so it does not run without one; the pool steps still run",
    );
  return deps.clusterId;
}

/**
 * reconcileEnv runs the Env step: read the Env fresh (or take the snapshot a tick just read),
 * decide with planEnv (members created, drift patched back, removed members deleted, status
 * written when changed) and apply the writes, each under its own precondition.
 */
export async function reconcileEnv(
  deps: StepDeps,
  namespace: string,
  name: string,
  snapshot?: EnvSnapshot,
): Promise<EnvReport> {
  const clusterId = clusterIdOf(deps);
  const report: EnvReport = { env: `${namespace}/${name}`, found: false, outcomes: [] };
  const snap = snapshot ?? (await readEnvSnapshot(deps.kube, namespace, name, clusterId));
  if (!snap) return report;
  report.found = true;
  report.outcomes = await execute(deps, planEnv(snap, clusterId, deps.now()));
  for (const o of report.outcomes) {
    if (o.result === "error") deps.log.warn({ env: report.env, target: o.target, err: o.error }, o.why);
    else if (o.result === "done") deps.log.info({ env: report.env, target: o.target }, o.why);
  }
  return report;
}
