import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, TEAM_LABEL } from "../../lib/api/keys.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * teamSandboxes counts the sandboxes a team holds (its pods starting or running and not being
 * deleted, in every namespace) from the apiserver's watch cache: a cap is a guard against draining shared pools, so
 * a count a moment old is good enough, and creates that race at the cap may pass it by as many as
 * run at once.
 */
export async function teamSandboxes(deps: Pick<ApiDeps, "kube">, team: string): Promise<number> {
  const selector = `${TEAM_LABEL}=${team},${SANDBOX_PHASE_LABEL} in (${SANDBOX_PHASE.STARTING},${SANDBOX_PHASE.RUNNING})`;
  const pods = (await deps.kube.listPods(undefined, selector, { cached: true })).items;
  // A pod being deleted serves its team no longer.
  return pods.filter((p) => !p.metadata?.deletionTimestamp).length;
}
