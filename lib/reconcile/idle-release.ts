import type { V1Pod } from "@kubernetes/client-node";
import {
  CLAIMED_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  SANDBOX_PHASE,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
} from "../api/keys.ts";
import { sandboxPhaseOf } from "../sandbox/inplace-state.ts";
import { toJsonPatch } from "../sandbox/intent-patch.ts";
import { releaseIntent } from "../sandbox/release-intent.ts";
import { parseTime } from "../util/time.ts";
import { type Action, isTerminating, podTarget } from "./action.ts";

/** lastActiveOf is the latest sign of life: the last-active annotation, else started, else claimed. */
export function lastActiveOf(pod: V1Pod): Date | undefined {
  const a = pod.metadata?.annotations ?? {};
  const times = [a[LAST_ACTIVE_ANNOTATION], a[STARTED_AT_ANNOTATION], a[CLAIMED_AT_ANNOTATION]]
    .map(parseTime)
    .filter((t): t is Date => t !== undefined);
  return times.length ? new Date(Math.max(...times.map((t) => t.getTime()))) : undefined;
}

/**
 * planIdleRelease releases running sandboxes that have been idle longer than their idle-timeout
 * annotation (seconds), with stop reason Released and failure reason IdleTimeout. Activity is read
 * from the last-active annotation (written by POST /v1/activity), falling back to the start and
 * claim times. Sandboxes without an idle timeout run until released.
 */
export function planIdleRelease(
  pods: readonly V1Pod[],
  idleImages: Readonly<Record<string, string>>,
  now: Date,
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.RUNNING) return [];
    const timeout = Number(pod.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]);
    const last = lastActiveOf(pod);
    if (!Number.isFinite(timeout) || timeout <= 0 || !last) return [];
    const idleSeconds = Math.floor((now.getTime() - last.getTime()) / 1000);
    if (idleSeconds <= timeout) return [];
    const message = `idle for ${idleSeconds} s (idle timeout ${timeout} s)`;
    const result = releaseIntent(
      pod,
      { idleImages, stopReason: STOP_REASON.RELEASED, failureReason: "IdleTimeout", failureMessage: message },
      now,
    );
    if (!result.ok) return [];
    return [
      {
        target: podTarget(pod),
        why: `release idle sandbox: ${message}`,
        write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
        event: { type: "Normal", reason: "IdleTimeout", action: "Release", note: message },
      },
    ];
  });
}
