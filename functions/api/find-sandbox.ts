import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { isPausedLeftover, sandboxPodOf } from "../../lib/claims/sandbox-pod.ts";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { isSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import type { HostDeps } from "../host-deps.ts";

/** SandboxLookup is what lookupSandbox found, and whether the read that found it was the cache's. */
export interface SandboxLookup {
  pod?: V1Pod;
  /** cached: the answer came from the watch cache, so it may be a moment old. */
  cached: boolean;
}

/**
 * lookupSandbox finds the pod that runs sandbox id, across namespaces, by its sandbox-id label
 * (one list of the pods with that label, at most one). It reads the apiserver's watch cache, and
 * etcd only when the cache holds no pod of that id (a sandbox claimed a moment ago may not be
 * there yet): a sandbox read a moment old is one its callers' preconditioned writes catch, and a
 * sandbox's phases only move forward. `fresh` reads etcd at once, for a caller whose write lost
 * to a newer version. A sandbox of another tenant is reported exactly like one that does not
 * exist (its owner labels never change, so etcd is not asked again). The pod a pause gave back
 * is not the sandbox (sandboxPodOf).
 */
export async function lookupSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  fresh = false,
): Promise<SandboxLookup> {
  if (!isSandboxId(id)) return { cached: false };
  const list = async (cached: boolean) =>
    (await deps.kube.listPods(undefined, `${SANDBOX_ID_LABEL}=${id}`, { cached })).items;
  // Only the pods a pause gave back (or none) in the cache: a resume's pod may be newer than it.
  const seen = fresh ? [] : await list(true);
  const cached = seen.length > 0 && seen.some((p) => !isPausedLeftover(p));
  return { pod: sandboxPodOf(cached ? seen : await list(false), tenant), cached };
}

/** findSandbox is lookupSandbox's pod: the tenant's sandbox id, undefined when it has none. */
export async function findSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  fresh = false,
): Promise<V1Pod | undefined> {
  return (await lookupSandbox(deps, tenant, id, fresh)).pod;
}
