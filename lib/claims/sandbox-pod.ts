// Which pod is a sandbox: the one its id label names, not being deleted, and not the pod a pause
// gave back to its pool (stop reason Paused, on its way to idle with the id still on it). After a
// resume, both pods carry the id for a moment; only the resumed one is the sandbox.
import type { V1Pod } from "@kubernetes/client-node";
import { STOP_REASON, STOP_REASON_ANNOTATION } from "../crd/keys.ts";
import { isTerminating } from "../kube/action.ts";
import { incarnationOf } from "../lifecycle/incarnation.ts";
import type { Tenant } from "./api-keys.ts";
import type { SandboxView } from "./sandbox-view.ts";
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

/**
 * withPausedViews lists each sandbox once, as GET /v1/sandboxes/{id} shows it (sandboxPodOf): the
 * views of the listed `pods`, newest claim first, then the `paused` views (from their snapshots,
 * in their order) of the sandboxes no pod runs. A resume's pod is the sandbox as soon as it
 * carries the id; the pod a pause gave back is not, so while it still carries the id (until it
 * is idle again) its row gives way to the paused view.
 */
export function withPausedViews(
  views: readonly SandboxView[],
  pods: readonly V1Pod[],
  paused: readonly SandboxView[],
): SandboxView[] {
  const leftovers = new Set(
    pods.filter(isPausedLeftover).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`),
  );
  const isLeftover = (s: SandboxView) => leftovers.has(`${s.namespace}/${s.pod}`);
  const withPod = new Set(views.filter((s) => !isLeftover(s)).map((s) => s.sandboxId));
  const shownPaused = paused.filter((s) => !withPod.has(s.sandboxId));
  const pausedIds = new Set(shownPaused.map((s) => s.sandboxId));
  return [
    ...views
      .filter((s) => !(isLeftover(s) && pausedIds.has(s.sandboxId)))
      .sort((a, b) => ((a.claimedAt ?? "") < (b.claimedAt ?? "") ? 1 : -1)),
    ...shownPaused,
  ];
}
