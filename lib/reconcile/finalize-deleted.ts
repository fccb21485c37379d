import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PROTECTION_FINALIZER } from "../crd/keys.ts";
import { type Action, isTerminating, podTarget, testVersion } from "../kube/action.ts";
import { captureStopRecord } from "../lifecycle/stop-record.ts";

/**
 * planFinalizeDeleted lets terminating pods go. Every deletion path (scale-down, pool deletion,
 * failures, `kubectl delete pod`, eviction) ends here: a claimed pod's history record is written
 * first, then our protection finalizer is removed, so no claimed pod disappears without its record.
 * The pods must be ours: a pool's own (ownedBy), or orphans of a pool that is gone (orphanedFrom);
 * the caller sorts out foreign ones, whose records would be forged and whose finalizers are not ours.
 */
export function planFinalizeDeleted(pods: readonly V1Pod[], now: Date): Action[] {
  return pods.flatMap((pod): Action[] => {
    const index = pod.metadata?.finalizers?.indexOf(SANDBOX_PROTECTION_FINALIZER) ?? -1;
    if (!isTerminating(pod) || index < 0) return [];
    const record = captureStopRecord(pod, now);
    return [
      {
        target: podTarget(pod),
        why: record
          ? `record sandbox ${record.sandboxId} (${record.stopReason}) and release the deleted pod`
          : "release the deleted pod",
        ...(record ? { record } : {}),
        write: {
          op: "patch",
          patch: [testVersion(pod), { op: "remove", path: `/metadata/finalizers/${index}` }],
        },
      },
    ];
  });
}
