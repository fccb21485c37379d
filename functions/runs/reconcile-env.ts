import { planAutoscale } from "../../lib/autoscale/plan-autoscale.ts";
import { type EnvSnapshot, planEnv } from "../../lib/env/plan-env.ts";
import type { HostDeps } from "../host-deps.ts";
import { withCatalog } from "../instance-types.ts";
import { readEnvSnapshot } from "../steps/env-snapshot.ts";
import { type ActionOutcome, execute } from "../steps/execute.ts";
import { Misconfigured } from "../steps/step.ts";
import { autoscaleEnv } from "./autoscale-env.ts";

/** EnvReport says what one Env run did. */
export interface EnvReport {
  env: string;
  found: boolean;
  outcomes: ActionOutcome[];
}

/** clusterIdOf is the host's local cluster ID, or the configuration error that says it is missing. */
export function clusterIdOf(deps: HostDeps): string {
  if (!deps.clusterId)
    throw new Misconfigured(
      "no local cluster ID is configured (AGENTBOX_CLUSTER_ID on the Node host, CLUSTER_ID on the Worker): the Env step materialises only the Env segment of its own cluster, so it does not run without one; the pool steps still run",
    );
  return deps.clusterId;
}

/**
 * reconcileEnv runs an Env's two steps on one read: the autoscaler (autoscaleEnv: member replicas
 * on the Env, bookkeeping on the pools), then materialisation from the Env as the autoscaler left
 * it (planEnv: members created, drift patched back, so new replicas reach the pools in the same
 * run; removed members deleted; status written when changed), each write under its own
 * precondition. A tick's snapshot is taken as read while it plans nothing but the Env status;
 * anything more is decided on a fresh read. An Env naming an instance type is decided with the
 * catalog (withCatalog: the tick's, else read).
 */
export async function reconcileEnv(
  deps: HostDeps,
  namespace: string,
  name: string,
  snapshot?: EnvSnapshot,
): Promise<EnvReport> {
  const clusterId = clusterIdOf(deps);
  const report: EnvReport = { env: `${namespace}/${name}`, found: false, outcomes: [] };
  // Members are sized from the instance type catalog (read only for an Env that names a type).
  const fresh = async () => {
    const read = await readEnvSnapshot(deps.kube, namespace, name, clusterId);
    return read && withCatalog(deps, read);
  };
  let snap = snapshot ? await withCatalog(deps, snapshot) : await fresh();
  // A tick's snapshot may be seconds old when its run starts, and a pool write is checked against
  // the pool only, never against the Env it was decided from: decide those on a fresh read (an
  // Env at rest plans none, so the tick still reads nothing per Env).
  if (snap && snapshot && plansMoreThanStatus(snap, clusterId, deps.now(), deps)) snap = await fresh();
  if (!snap) return report;
  report.found = true;
  const scaled = await autoscaleEnv(deps, snap, clusterId);
  report.outcomes.push(...scaled.outcomes);
  if (scaled.env) {
    const actions = planEnv({ ...snap, env: scaled.env, pools: scaled.pools }, clusterId, deps.now());
    report.outcomes.push(...(await execute(deps, actions)));
  }
  for (const o of report.outcomes) {
    if (o.result === "error") deps.log.warn({ env: report.env, target: o.target, err: o.error }, o.why);
    else if (o.result === "done") deps.log.info({ env: report.env, target: o.target }, o.why);
  }
  return report;
}

/** plansMoreThanStatus: the autoscaler or the Env step would write something besides the Env status. */
function plansMoreThanStatus(snap: EnvSnapshot, clusterId: string, now: Date, deps: HostDeps): boolean {
  const scale = planAutoscale(snap, clusterId, now, deps.autoscale);
  if (scale.envWrite || scale.poolWrites.length > 0) return true;
  return planEnv(snap, clusterId, now).some((a) => a.target.kind === "SandboxPool");
}
