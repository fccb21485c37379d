import type { V1Pod } from "@kubernetes/client-node";
import { END_AT_ANNOTATION, SANDBOX_PHASE, STOP_REASON } from "../crd/keys.ts";
import { type Action, isTerminating, podTarget } from "../kube/action.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { type ResetSource, releaseIntent, resetFrom } from "../lifecycle/release-intent.ts";
import { parseTime } from "../util/time.ts";

/** LIFETIME_FAILURE_REASON is the failure reason of a sandbox released at its end-at. */
export const LIFETIME_FAILURE_REASON = "LifetimeExpired";

/**
 * planLifetimeRelease releases running sandboxes whose end-at (their lifetime, E2B's `timeout`)
 * has passed, however active they are: stop reason Released, failure reason LifetimeExpired.
 * A starting sandbox is left to its startup timeout; one without end-at lives until released.
 */
export function planLifetimeRelease(pods: readonly V1Pod[], reset: ResetSource, now: Date): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.RUNNING) return [];
    const raw = pod.metadata?.annotations?.[END_AT_ANNOTATION];
    const endAt = parseTime(raw);
    if (!endAt || endAt.getTime() > now.getTime()) return [];
    const message = `lifetime ended at ${raw}`;
    const result = releaseIntent(
      pod,
      {
        ...resetFrom(reset),
        stopReason: STOP_REASON.RELEASED,
        failureReason: LIFETIME_FAILURE_REASON,
        failureMessage: message,
      },
      now,
    );
    if (!result.ok) return [];
    return [
      {
        target: podTarget(pod),
        why: `release expired sandbox: ${message}`,
        write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
        event: { type: "Normal", reason: LIFETIME_FAILURE_REASON, action: "Release", note: message },
      },
    ];
  });
}
