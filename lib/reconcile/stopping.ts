import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import {
  type Action,
  between,
  guardedDelete,
  isTerminating,
  observations,
  podTarget,
} from "../kube/action.ts";
import { completeStoppingIntent } from "../lifecycle/complete-intent.ts";
import { isUpdateComplete } from "../lifecycle/completion.ts";
import { readInplaceState } from "../lifecycle/inplace-state.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { podPhaseDuration } from "../lifecycle/phase-since.ts";
import { REPLACE_BY_POLICY, REPLACE_BY_ROLLOUT } from "../lifecycle/release-intent.ts";
import { resetBlocker } from "../lifecycle/reset-progress.ts";
import { unrestartableServed } from "../lifecycle/served-containers.ts";
import { captureStopRecord } from "../lifecycle/stop-record.ts";

/**
 * planStopping returns each stopping pod whose idle image is back to Idle. The terminal record is
 * captured from the pod as it is now (the stop metadata is still on it) and stored before the
 * patch that clears it; the patch tests resourceVersion and the stopping phase, so the transition
 * happens once even when several runs race, and the record, keyed by sandbox ID, once too. A pod
 * whose reset ends in a replacement, or outlived the stopping timeout (resetBlocker), is deleted
 * after the same record instead (the pool creates its successor); a timeout says so in a Warning
 * Event, a replacement the pool's policy did not ask for in a Normal one (`Replaced`, why).
 */
export function planStopping(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  digests: ReadonlyMap<string, string>,
  now: Date,
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.STOPPING) return [];
    const { state } = readInplaceState(pod);
    const blocker = resetBlocker(pod, pool, now);
    const record = captureStopRecord(pod, now);
    const recycle = observations(
      ["recycle", podPhaseDuration(pod, SANDBOX_PHASE.STOPPING, now)],
      ["running", between(record?.startedAt, record?.terminatedAt)],
    );
    const stopped = record ? `sandbox ${record.sandboxId} stopped (${record.stopReason}); ` : "";
    if (blocker?.reason === "Replace" || blocker?.reason === "TimedOut") {
      // The pool's policy and its rollout (whose Events are the pool's) replace pods silently.
      const byPolicy =
        blocker.reason === "Replace" &&
        (blocker.message === REPLACE_BY_POLICY || blocker.message === REPLACE_BY_ROLLOUT);
      return [
        {
          target: podTarget(pod),
          why: `${stopped}replace the pod: ${blocker.message}`,
          ...(record ? { record } : {}),
          write: guardedDelete(pod),
          ...(byPolicy
            ? {}
            : {
                event:
                  blocker.reason === "TimedOut"
                    ? {
                        type: "Warning" as const,
                        reason: "ResetTimedOut",
                        action: "Delete",
                        note: blocker.message,
                      }
                    : {
                        type: "Normal" as const,
                        reason: "Replaced",
                        action: "Delete",
                        note: blocker.message,
                      },
              }),
          ...recycle,
        },
      ];
    }
    if (!state || !isUpdateComplete(pod, state, digests)) return [];
    const result = completeStoppingIntent(pod, now);
    if (!result.ok) return [];
    return [
      {
        target: podTarget(pod),
        why: `${stopped}pod back to idle`,
        ...(record ? { record } : {}),
        write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
        ...recycle,
      },
    ];
  });
}

/**
 * planServedIdle replaces idle pods whose served containers cannot be restarted in place
 * (unrestartableServed): a claim refuses them, so they would hold a slot and serve nobody. Only
 * an older controller's reset leaves such pods; each is deleted under its idle phase and
 * resourceVersion (a claim in between wins), with a Warning Event.
 */
export function planServedIdle(pods: readonly V1Pod[]): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.IDLE) return [];
    const stuck = unrestartableServed(pod);
    if (stuck.length === 0) return [];
    const note = `idle pod's containers ${stuck.join(", ")} served an earlier sandbox and cannot be restarted in place`;
    return [
      {
        target: podTarget(pod),
        why: `replace the pod: ${note}`,
        write: guardedDelete(pod),
        event: { type: "Warning", reason: "ResetByReplacement", action: "Delete", note },
      },
    ];
  });
}
