// Which pod revision a pod was rendered from (POD_REVISION_LABEL), read by the pool's rollout and
// by a release, which replaces an outdated pod instead of resetting it (ADR 0031).
import type { V1Pod } from "@kubernetes/client-node";
import { POD_REVISION_LABEL } from "../crd/keys.ts";

/** revisionOf is a pod's POD_REVISION_LABEL, if it has one. */
export function revisionOf(pod: V1Pod): string | undefined {
  return pod.metadata?.labels?.[POD_REVISION_LABEL];
}

/**
 * outdatedFor: the pod carries a pod revision and it is not `revision`, the pool's current one.
 * A pod without the label (made before rollouts, until the pool labels it) counts as current.
 */
export function outdatedFor(pod: V1Pod, revision: string | undefined): boolean {
  const own = revisionOf(pod);
  return revision !== undefined && own !== undefined && own !== revision;
}
