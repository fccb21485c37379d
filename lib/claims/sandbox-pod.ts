// Which pod is a sandbox: the one its id label names, not being deleted, and not the pod a pause
// gave back to its pool (stop reason Paused, on its way to idle with the id still on it). After a
// resume, both pods carry the id for a moment; only the resumed one is the sandbox.
import type { V1Pod } from "@kubernetes/client-node";
import { STOP_REASON, STOP_REASON_ANNOTATION } from "../crd/keys.ts";
import { isTerminating } from "../kube/action.ts";
import { incarnationOf } from "../lifecycle/incarnation.ts";
import type { Tenant } from "./api-keys.ts";
import { ownedBy } from "./tenant-scope.ts";

/** isPausedLeftover: the pod a pause released (it carries the id until it is idle again). */
export function isPausedLeftover(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[STOP_REASON_ANNOTATION] === STOP_REASON.PAUSED;
}

/**
 * sandboxPodOf picks the tenant's sandbox among the pods carrying its id: owned, not terminating,
 * not a paused leftover; of several (a resume's claim racing a stale one), the latest incarnation.
 */
export function sandboxPodOf(pods: readonly V1Pod[], tenant: Tenant): V1Pod | undefined {
  return pods
    .filter((p) => !isTerminating(p) && !isPausedLeftover(p) && ownedBy(p, tenant))
    .sort((a, b) => incarnationOf(b) - incarnationOf(a))[0];
}
