// Which pods may carry a route. The sandbox-id label says nothing by itself: anyone who may create
// a pod in any namespace can put a victim's id on it, and the router hands a route's pod the
// sandbox's traffic and envd token. A route comes only from a pod a SandboxPool controls (the
// controlling ownerReference renderPod writes, as lib/membership/pod-ownership.ts reads it for claims)
// and only once the router has read that pool, in the pod's namespace, with that uid: a reference
// is easy to forge, a pool's uid in the namespace is not.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import { poolControllerOf } from "../membership/pod-ownership.ts";

/** RouteOwner is the pool a pod says controls it: in the pod's namespace, by name and uid. */
export interface RouteOwner {
  namespace: string;
  pool: string;
  uid: string;
}

/**
 * OWNER_TRUST_MS: how long a pool read that confirmed an owner is believed (the pool may be gone
 * later); OWNER_DOUBT_MS: how long a refusal is (a uid that names no pool stays that way, but a
 * read is cheap and the pool may have been made a moment before).
 */
export const OWNER_TRUST_MS = 5 * 60_000;
export const OWNER_DOUBT_MS = 30_000;

/**
 * routeOwnerOf is the pool a pod names as its controller, when the reference is a SandboxPool of
 * our group with a uid and the pod's pool label names the same pool (as ownedBy requires), else
 * undefined: such a pod never carries a route.
 */
export function routeOwnerOf(pod: V1Pod): RouteOwner | undefined {
  const ref = poolControllerOf(pod);
  const namespace = pod.metadata?.namespace;
  if (!ref?.uid || !namespace || pod.metadata?.labels?.[SANDBOX_POOL_LABEL] !== ref.name) return undefined;
  return { namespace, pool: ref.name, uid: ref.uid };
}

/** ownerKey names an owner in a map. */
export const ownerKey = (o: RouteOwner): string => `${o.namespace}/${o.pool}/${o.uid}`;

/**
 * ownerConfirmed says whether a pool read (undefined: there is no such pool) confirms the owner:
 * the pool of that name in that namespace has that uid.
 */
export function ownerConfirmed(
  owner: RouteOwner,
  pool: { metadata?: { name?: string; namespace?: string; uid?: string } } | undefined,
): boolean {
  const m = pool?.metadata;
  return m?.uid === owner.uid && m.name === owner.pool && m.namespace === owner.namespace;
}

/** OwnerVerdict is a pool read's answer about an owner, and when it was read (ms). */
export interface OwnerVerdict {
  owned: boolean;
  at: number;
}

/** verdictCurrent says whether a verdict still stands at `now` (OWNER_TRUST_MS, OWNER_DOUBT_MS). */
export function verdictCurrent(verdict: OwnerVerdict, now: number): boolean {
  const age = now - verdict.at;
  return age >= 0 && age <= (verdict.owned ? OWNER_TRUST_MS : OWNER_DOUBT_MS);
}
