import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { pauseMarkOf } from "../../lib/snapshots/pause-mark.ts";
import { heldByPause } from "../../lib/snapshots/snapshot-state.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * withoutHeldPods is `pods` less those a pause holds (heldByPause), for the steps that release a
 * running sandbox for its lifetime or its idleness: a pause that marked the pod releases it
 * itself, without a terminal record. Only a marked pod costs a read of its snapshot; a read that
 * fails keeps the pod out of this run (the next run decides again), never releasing on a guess.
 * An unmarked pod stays in: its release is preconditioned on the pod as read, so it loses to a
 * pause that marks the pod first.
 */
export async function withoutHeldPods(
  deps: Pick<HostDeps, "kube" | "log">,
  pods: readonly V1Pod[],
): Promise<V1Pod[]> {
  const kept: V1Pod[] = [];
  for (const pod of pods) {
    if (pauseMarkOf(pod) === undefined) {
      kept.push(pod);
      continue;
    }
    const namespace = pod.metadata?.namespace ?? "";
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
    try {
      const s = id ? await orMissing(deps.kube.getSnapshot(namespace, id)) : undefined;
      if (!heldByPause(pod, s)) kept.push(pod);
    } catch (e) {
      deps.log.warn(
        { sandboxId: id, err: String(e) },
        "a paused pod's snapshot could not be read; left to the next run",
      );
    }
  }
  return kept;
}
