// When is an in-place image swap finished, and has a running sandbox's container been replaced
// behind our back? Both are read from container statuses, which kubelet writes in several
// separate patches, so only signals that change atomically are trusted: imageID/containerID,
// never restartCount or Ready alone.
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../crd/annotations.ts";
import { INPLACE_UPDATE_PHASE, SANDBOX_PHASE } from "../crd/keys.ts";
import { normalizeImage } from "./image-reference.ts";

type StableContainerStatus = NonNullable<InplaceUpdateState["stableContainerStatuses"]>[string];

/**
 * targetImagesOf is the container → image map an update waits for. `targetImages` is current;
 * the legacy single `targetImage` applies to the pod's first container.
 */
export function targetImagesOf(pod: V1Pod, state: InplaceUpdateState): Record<string, string> {
  if (state.targetImages && Object.keys(state.targetImages).length > 0) return state.targetImages;
  const first = pod.spec?.containers?.[0]?.name;
  return state.targetImage && first ? { [first]: state.targetImage } : {};
}

function statusOf(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((s) => s.name === name);
}

function imageMatches(status: V1ContainerStatus, target: string, digest: string | undefined): boolean {
  if (digest) return (status.imageID ?? "").endsWith(digest);
  return normalizeImage(status.image ?? "") === normalizeImage(target);
}

/**
 * isUpdateComplete tells whether every container the update targets runs its target image in a
 * new container. Per target container: the spec carries the target image, a status exists and is
 * running, the image matches (by digest when `digests` knows the target's, else by normalised
 * name), and the container was replaced since the update was triggered (imageID or containerID
 * differs from lastContainerStatuses). The last rule matters for rollbacks to an image with the
 * same digest: the old container already "matches", so only a new containerID proves the swap.
 * A completed state is complete; an update with no targets has nothing to wait for.
 */
export function isUpdateComplete(
  pod: V1Pod,
  state: InplaceUpdateState,
  digests: ReadonlyMap<string, string>,
): boolean {
  if (state.phase === INPLACE_UPDATE_PHASE.COMPLETED) return true;
  const specImages = new Map((pod.spec?.containers ?? []).map((c) => [c.name, c.image]));
  return Object.entries(targetImagesOf(pod, state)).every(([name, target]) => {
    if (specImages.get(name) !== target) return false;
    const status = statusOf(pod, name);
    if (!status?.state?.running) return false;
    if (!imageMatches(status, target, digests.get(target))) return false;
    const last = state.lastContainerStatuses?.[name];
    if (!last) return true;
    return (
      (status.imageID ?? "") !== (last.imageID ?? "") ||
      (status.containerID ?? "") !== (last.containerID ?? "")
    );
  });
}

/**
 * hasUnexpectedRestart tells whether a running sandbox's container was replaced since the update
 * completed (OOM kill, crash): some container's containerID differs from the snapshot in
 * stableContainerStatuses. restartCount is ignored on purpose (kubelet patches it separately, so a
 * fresh read can show a new containerID with the old count, or the reverse). Containers without a
 * snapshot (sidecars) or with an empty snapshot containerID (taken before kubelet reported one)
 * are skipped rather than reported as restarts. Only a completed update towards running counts.
 */
export function hasUnexpectedRestart(pod: V1Pod, state: InplaceUpdateState): boolean {
  if (state.phase !== INPLACE_UPDATE_PHASE.COMPLETED) return false;
  if ((state.targetPodPhase || SANDBOX_PHASE.RUNNING) !== SANDBOX_PHASE.RUNNING) return false;
  const stable = state.stableContainerStatuses ?? {};
  return (pod.status?.containerStatuses ?? []).some((status) => {
    const snapshot = stable[status.name];
    if (!snapshot?.containerID) return false;
    return (status.containerID ?? "") !== snapshot.containerID;
  });
}

/**
 * stableContainerStatuses snapshots containerID and restartCount, taken when an update towards
 * running completes, for hasUnexpectedRestart. With `targets` only those containers are recorded:
 * the sandbox's own containers, so an injected sidecar restarting on its own does not recycle the
 * sandbox. An empty containerID is left out (the restart check then skips that container).
 */
export function stableContainerStatuses(
  pod: V1Pod,
  targets?: Readonly<Record<string, string>>,
): Record<string, StableContainerStatus> {
  const out: Record<string, StableContainerStatus> = {};
  for (const status of pod.status?.containerStatuses ?? []) {
    if (targets && !(status.name in targets)) continue;
    out[status.name] = status.containerID
      ? { containerID: status.containerID, restartCount: status.restartCount ?? 0 }
      : { restartCount: status.restartCount ?? 0 };
  }
  return out;
}
