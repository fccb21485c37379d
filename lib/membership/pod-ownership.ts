// Which Pods belong to a pool. The pool label alone says nothing: anyone who may create a Pod in
// the namespace can put it on one, and a claim hands the Pod a tenant's sealed env vars and envd
// token. A Pod is the pool's only when the pool controls it: the controlling ownerReference
// renderPod writes, naming the pool's uid, which only the apiserver's copy of the pool knows.
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { API_VERSION, GROUP, KIND, SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseTime } from "../util/time.ts";

/**
 * poolOwnerReference is the reference that makes a Pod the pool's: controlling, naming the pool's
 * name and uid (renderPod writes it; blockOwnerDeletion so foreground deletion waits for the Pods).
 */
export function poolOwnerReference(pool: SandboxPool): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND.SANDBOX_POOL,
    name: pool.metadata?.name ?? "",
    uid: pool.metadata?.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * poolControllerOf is the Pod's controlling ownerReference when it names a SandboxPool of our
 * group (whatever its version, as lib/membership/env-ownership.ts reads Env owners), else undefined.
 */
export function poolControllerOf(pod: V1Pod): V1OwnerReference | undefined {
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref?.kind === KIND.SANDBOX_POOL && ref.apiVersion?.startsWith(`${GROUP}/`) && ref.uid
    ? ref
    : undefined;
}

/**
 * ownedBy says whether the Pod belongs to the pool: it carries the pool label with the pool's
 * name AND its controlling ownerReference is a SandboxPool with the pool's uid. A pool without a
 * uid (not read from the apiserver) owns nothing.
 */
export function ownedBy(pod: V1Pod, pool: SandboxPool): boolean {
  const uid = pool.metadata?.uid;
  return (
    !!uid &&
    pod.metadata?.labels?.[SANDBOX_POOL_LABEL] === pool.metadata?.name &&
    poolControllerOf(pod)?.uid === uid
  );
}

/** PodsByOwnership splits the Pods labelled with a pool's name into its own and the others. */
export interface PodsByOwnership {
  owned: V1Pod[];
  /** foreign carry the label (or were listed with the pool's) but the pool does not control them. */
  foreign: V1Pod[];
}

/** partitionPods splits Pods into those the pool owns (ownedBy) and foreign ones, order kept. */
export function partitionPods(pool: SandboxPool, pods: readonly V1Pod[]): PodsByOwnership {
  const out: PodsByOwnership = { owned: [], foreign: [] };
  for (const pod of pods) (ownedBy(pod, pool) ? out.owned : out.foreign).push(pod);
  return out;
}

/**
 * orphanedFrom says whether the Pod was created by a pool that is gone: its controller is a
 * SandboxPool named like its pool label, and `current` (the pool of that name now: undefined when
 * there is none) is not that pool: absent, or made again later (a new uid, created after the
 * Pod). Such a Pod's pool run never comes, so whoever sees it being deleted lets it go (records
 * it, drops our finalizer). A Pod naming a pool uid that differs from a pool which existed before
 * it is foreign, never orphaned: it cannot have been that pool's.
 */
export function orphanedFrom(pod: V1Pod, current: SandboxPool | undefined): boolean {
  const ref = poolControllerOf(pod);
  const label = pod.metadata?.labels?.[SANDBOX_POOL_LABEL];
  if (!ref || !label || ref.name !== label) return false;
  if (!current) return true;
  if (current.metadata?.name !== label || current.metadata?.uid === ref.uid) return false;
  const podAt = parseTime(pod.metadata?.creationTimestamp);
  const poolAt = parseTime(current.metadata?.creationTimestamp);
  return !!podAt && !!poolAt && podAt.getTime() < poolAt.getTime();
}
