import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL, TEAM_LABEL, USER_LABEL } from "../../lib/api/keys.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { isSandboxId } from "../../lib/sandboxes/ids.ts";
import type { ApiDeps } from "./deps.ts";

/** ownedBy: admins own everything; a tenant owns pods with its team and user labels. */
export function ownedBy(pod: V1Pod, tenant: Tenant): boolean {
  if (tenant.admin) return true;
  const labels = pod.metadata?.labels ?? {};
  return labels[TEAM_LABEL] === tenant.team && labels[USER_LABEL] === tenant.user;
}

/**
 * findSandbox finds the pod that runs sandbox id, across namespaces, by its sandbox-id label. A
 * sandbox of another tenant is reported exactly like one that does not exist.
 */
export async function findSandbox(deps: ApiDeps, tenant: Tenant, id: string): Promise<V1Pod | undefined> {
  if (!isSandboxId(id)) return undefined;
  const pods = await deps.kube.listPods(undefined, `${SANDBOX_ID_LABEL}=${id}`);
  return pods.items.find((p) => !p.metadata?.deletionTimestamp && ownedBy(p, tenant));
}
