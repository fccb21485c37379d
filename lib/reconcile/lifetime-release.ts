import type { V1Pod } from "@kubernetes/client-node";
import { END_AT_ANNOTATION, ON_TIMEOUT_ANNOTATION, SANDBOX_PHASE, STOP_REASON } from "../crd/keys.ts";
import { type Action, isTerminating, podTarget } from "../kube/action.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { type ResetSource, releaseIntent, resetFrom } from "../lifecycle/release-intent.ts";
import { parseTime } from "../util/time.ts";

/** LIFETIME_FAILURE_REASON is the failure reason of a sandbox released at its end-at. */
export const LIFETIME_FAILURE_REASON = "LifetimeExpired";

/**
 * AUTO_PAUSE_GRACE_MS is how long past its end-at a sandbox that pauses at its timeout (E2B's
 * autoPause) is left to its pause: a pause that cannot complete by then (no snapshot agent, a
 * registry down) ends in a release, so no sandbox outlives its lifetime for long.
 */
export const AUTO_PAUSE_GRACE_MS = 5 * 60_000;

/** pausesOnTimeout: the sandbox asked to pause rather than end at its timeout. */
export function pausesOnTimeout(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ON_TIMEOUT_ANNOTATION] === "pause";
}

/** expiredRunning: a running sandbox whose end-at has passed (undefined: not one). */
function expiredAt(pod: V1Pod, now: Date): Date | undefined {
  if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.RUNNING) return undefined;
  const endAt = parseTime(pod.metadata?.annotations?.[END_AT_ANNOTATION]);
  return endAt && endAt.getTime() <= now.getTime() ? endAt : undefined;
}

/**
 * autoPauseDue are the running sandboxes past their end-at that asked to pause at their timeout,
 * still within AUTO_PAUSE_GRACE_MS: the pause-expired step pauses them.
 */
export function autoPauseDue(pods: readonly V1Pod[], now: Date): V1Pod[] {
  return pods.filter((pod) => {
    const endAt = expiredAt(pod, now);
    return (
      endAt !== undefined && pausesOnTimeout(pod) && now.getTime() < endAt.getTime() + AUTO_PAUSE_GRACE_MS
    );
  });
}

/**
 * autoPauseUntil is when an auto-pause of `pod` must be done: its end-at plus AUTO_PAUSE_GRACE_MS,
 * after which release-expired ends it. The pause's deadline is this, so its commit gets the whole
 * grace rather than a caller's default wait.
 */
export function autoPauseUntil(pod: V1Pod): Date | undefined {
  const endAt = parseTime(pod.metadata?.annotations?.[END_AT_ANNOTATION]);
  return endAt && new Date(endAt.getTime() + AUTO_PAUSE_GRACE_MS);
}

/**
 * planLifetimeRelease releases running sandboxes whose end-at (their lifetime, E2B's `timeout`)
 * has passed, however active they are: stop reason Released, failure reason LifetimeExpired.
 * A starting sandbox is left to its startup timeout; one without end-at lives until released; one
 * that pauses at its timeout is left to its pause for AUTO_PAUSE_GRACE_MS (autoPauseDue).
 */
export function planLifetimeRelease(pods: readonly V1Pod[], reset: ResetSource, now: Date): Action[] {
  const pausing = new Set(autoPauseDue(pods, now));
  return pods.flatMap((pod): Action[] => {
    if (!expiredAt(pod, now) || pausing.has(pod)) return [];
    const raw = pod.metadata?.annotations?.[END_AT_ANNOTATION];
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
