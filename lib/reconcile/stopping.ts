import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE } from "../api/keys.ts";
import { completeStoppingIntent } from "../sandbox/complete-intent.ts";
import { isUpdateComplete } from "../sandbox/completion.ts";
import { readInplaceState, sandboxPhaseOf } from "../sandbox/inplace-state.ts";
import { toJsonPatch } from "../sandbox/intent-patch.ts";
import { podPhaseDuration } from "../sandbox/phase-since.ts";
import { captureStopRecord } from "../sandbox/stop-record.ts";
import { type Action, between, isTerminating, observations, podTarget } from "./action.ts";

/**
 * planStopping returns each stopping pod whose idle image is back to Idle. The terminal record is
 * captured from the pod as it is now (the stop metadata is still on it) and stored before the
 * patch that clears it; the patch tests resourceVersion and the stopping phase, so the transition
 * happens once even when several runs race, and the record, keyed by sandbox ID, once too.
 */
export function planStopping(
  pods: readonly V1Pod[],
  digests: ReadonlyMap<string, string>,
  now: Date,
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.STOPPING) return [];
    const { state } = readInplaceState(pod);
    if (!state || !isUpdateComplete(pod, state, digests)) return [];
    const result = completeStoppingIntent(pod, now);
    if (!result.ok) return [];
    const record = captureStopRecord(pod, now);
    return [
      {
        target: podTarget(pod),
        why: record
          ? `sandbox ${record.sandboxId} stopped (${record.stopReason}); pod back to idle`
          : "pod back to idle",
        ...(record ? { record } : {}),
        write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
        ...observations(
          ["recycle", podPhaseDuration(pod, SANDBOX_PHASE.STOPPING, now)],
          ["running", between(record?.startedAt, record?.terminatedAt)],
        ),
      },
    ];
  });
}
