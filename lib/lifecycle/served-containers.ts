// A container that ran a sandbox must never run another: the next tenant would find the previous
// one's processes, files and envd state. Containers are told apart by containerID, which the
// runtime assigns afresh to every new container.
import type { V1Pod } from "@kubernetes/client-node";
import { INPLACE_UPDATE_PHASE, SANDBOX_PHASE } from "../crd/keys.ts";
import { restartReference } from "./image-reference.ts";
import { readInplaceState } from "./inplace-state.ts";

/**
 * servedContainers names the pod's containers that may have served a sandbox, so a claim must
 * restart them before handing the pod out. A pod that was never claimed (no in-place state) has
 * none. A pod back from a reset keeps, in its completed state, the containerIDs the reset
 * replaced (lastContainerStatuses of the stop): a container whose id differs from its recorded
 * one is fresh; one with the same id, no id, or no record (a reset by an older controller that
 * restarted nothing) counts as served. Any other state (unreadable, or not a finished reset)
 * counts every container as served.
 */
export function servedContainers(pod: V1Pod): Set<string> {
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const read = readInplaceState(pod);
  if (read.state === undefined && read.reason === undefined) return new Set();
  const { state } = read;
  const reset =
    state?.phase === INPLACE_UPDATE_PHASE.COMPLETED && state.targetPodPhase === SANDBOX_PHASE.IDLE
      ? (state.lastContainerStatuses ?? {})
      : {};
  const statuses = pod.status?.containerStatuses ?? [];
  return new Set(
    names.filter((name) => {
      const now = statuses.find((s) => s.name === name)?.containerID;
      const before = reset[name]?.containerID;
      return !now || !before || now === before;
    }),
  );
}

/**
 * unrestartableServed names the served containers of an idle pod that cannot be restarted in
 * place (restartReference has no other spelling of their image): no claim can take the pod, so
 * it is replaced. Only an older controller's reset leaves such a pod; ours replaces it at release.
 */
export function unrestartableServed(pod: V1Pod): string[] {
  const served = servedContainers(pod);
  const statuses = pod.status?.containerStatuses ?? [];
  return (pod.spec?.containers ?? [])
    .filter((c) => served.has(c.name))
    .filter(
      (c) => restartReference(c.image ?? "", statuses.find((s) => s.name === c.name)?.imageID) === undefined,
    )
    .map((c) => c.name);
}
