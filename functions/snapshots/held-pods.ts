import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { pauseMarkOf } from "../../lib/snapshots/pause-mark.ts";
import { heldByPause } from "../../lib/snapshots/snapshot-state.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * heldPods is the uids of `pods` a pause holds (heldByPause): a pause that marked the pod releases
 * it itself, without a terminal record, so the steps that would release it for its lifetime, its
 * idleness or a container restart leave it alone. Only a marked pod costs a read of its snapshot;
 * one whose read fails is held too for this run (the next run decides again), never released on a
 * guess. An unmarked pod is not held: its release is preconditioned on the pod as read, so it
 * loses to a pause that marks the pod first.
 */
export async function heldPods(
  deps: Pick<HostDeps, "kube" | "log">,
  pods: readonly V1Pod[],
): Promise<Set<string>> {
  const held = new Set<string>();
  for (const pod of pods) {
    if (pauseMarkOf(pod) === undefined) continue;
    const namespace = pod.metadata?.namespace ?? "";
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
    try {
      const s = id ? await orMissing(deps.kube.getSnapshot(namespace, id)) : undefined;
      if (heldByPause(pod, s)) held.add(pod.metadata?.uid ?? "");
    } catch (e) {
      held.add(pod.metadata?.uid ?? "");
      deps.log.warn(
        { sandboxId: id, err: String(e) },
        "a paused pod's snapshot could not be read; left to the next run",
      );
    }
  }
  return held;
}

/** withoutHeldPods is `pods` less those heldPods names. */
export async function withoutHeldPods(
  deps: Pick<HostDeps, "kube" | "log">,
  pods: readonly V1Pod[],
): Promise<V1Pod[]> {
  const held = await heldPods(deps, pods);
  return pods.filter((p) => !held.has(p.metadata?.uid ?? ""));
}
