import type { Tenant } from "../../lib/claims/api-keys.ts";
import { ownedBy, tenantSelector } from "../../lib/claims/tenant-scope.ts";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import { phaseOf } from "../../lib/snapshots/snapshot-state.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * findSnapshot reads the SandboxSnapshot of the tenant's sandbox id, in any namespace (one list
 * by its sandbox-id label, a quorum read: a pause or resume decides on it). Another tenant's is
 * reported like none, as findSandbox does for pods.
 */
export async function findSnapshot(
  deps: Pick<HostDeps, "kube">,
  tenant: Tenant,
  id: string,
): Promise<SandboxSnapshot | undefined> {
  if (!isSandboxId(id)) return undefined;
  const list = await deps.kube.listSnapshots(undefined, { labelSelector: `${SANDBOX_ID_LABEL}=${id}` });
  return list.items.find((s) => s.spec.sandboxId === id && ownedBy(s, tenant));
}

/**
 * findPaused is the tenant's sandbox id when it holds no pod: paused, or on its way in or out
 * (Committing and Committed still have a pod; Resumed has one again, so those are not paused).
 */
export async function findPaused(
  deps: Pick<HostDeps, "kube">,
  tenant: Tenant,
  id: string,
): Promise<SandboxSnapshot | undefined> {
  const s = await findSnapshot(deps, tenant, id);
  const phase = s && phaseOf(s);
  return phase === SNAPSHOT_PHASE.PAUSED || phase === SNAPSHOT_PHASE.RESUMING ? s : undefined;
}

/** listPaused lists the tenant's paused sandboxes (phase Paused or Resuming), every namespace. */
export async function listPaused(deps: Pick<HostDeps, "kube">, tenant: Tenant): Promise<SandboxSnapshot[]> {
  const labelSelector = [SANDBOX_ID_LABEL, ...tenantSelector(tenant)].join(",");
  const list = await deps.kube.listSnapshots(undefined, { labelSelector });
  return list.items.filter((s) => {
    const phase = phaseOf(s);
    return ownedBy(s, tenant) && (phase === SNAPSHOT_PHASE.PAUSED || phase === SNAPSHOT_PHASE.RESUMING);
  });
}
