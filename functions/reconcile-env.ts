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
 * reconcileEnv runs the Env step: read the Env fresh (or take the snapshot a tick just read, and
 * read afresh when that plans a pool write), decide with planEnv (members created, drift patched back, removed members deleted, status
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
  const read = () => readEnvSnapshot(deps.kube, namespace, name, clusterId);
  let snap = snapshot ?? (await read());
  if (!snap) return report;
  let actions = planEnv(snap, clusterId, deps.now());
  // A tick's snapshot may be seconds old when its run starts, and a pool create, patch or delete
  // is checked against the pool only, never against the Env it was decided from: decide those
  // on a fresh read (an Env at rest plans none, so the tick still reads nothing per Env).
  if (snapshot && actions.some((a) => a.target.kind === "SandboxPool")) {
    snap = await read();
    if (!snap) return report;
    actions = planEnv(snap, clusterId, deps.now());
  }
  report.found = true;
  report.outcomes = await execute(deps, actions);
  for (const o of report.outcomes) {
    if (o.result === "error") deps.log.warn({ env: report.env, target: o.target, err: o.error }, o.why);
    else if (o.result === "done") deps.log.info({ env: report.env, target: o.target }, o.why);
  }
  return report;
}
