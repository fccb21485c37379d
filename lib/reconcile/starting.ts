import type { V1Pod } from "@kubernetes/client-node";
import {
  SANDBOX_PHASE,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  STOP_REASON,
  WAITER_UNTIL_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { type Action, isTerminating, observations, podTarget, testVersion } from "../kube/action.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { completeStartingIntent } from "../lifecycle/complete-intent.ts";
import { isUpdateComplete } from "../lifecycle/completion.ts";
import { buildStatusDetail } from "../lifecycle/diagnostics.ts";
import { readInplaceState } from "../lifecycle/inplace-state.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { podPhaseDuration } from "../lifecycle/phase-since.ts";
import { releaseIntent } from "../lifecycle/release-intent.ts";
import { podReset } from "../pool/render-pod.ts";
import { parseGoDuration } from "../util/duration.ts";

/**
 * startupTimeoutMs is how long a sandbox may stay starting: the per-pod startup-timeout
 * annotation (seconds, written at claim) wins over the pool's defaultStartupTimeout; neither set
 * means no limit.
 */
export function startupTimeoutMs(pool: SandboxPool, pod: V1Pod): number | undefined {
  const perPod = Number(pod.metadata?.annotations?.[STARTUP_TIMEOUT_ANNOTATION]);
  if (Number.isFinite(perPod) && perPod > 0) return perPod * 1000;
  return parseGoDuration(pool.spec.defaultStartupTimeout);
}

/**
 * SLOW_PULL_MS is how long a start may be plainly pulling before the diagnosis says so on the pod.
 * Every start pulls; writing "Pulling" at once would cost every sandbox one more pod write on its
 * way to Running, to record that nothing is wrong. The API derives it from the live pod anyway
 * (sandboxView); the annotation is for starts that are slow or stuck (ADR 0012).
 */
export const SLOW_PULL_MS = 5000;

/**
 * planStarting moves each starting pod on: Running once every target container runs its target
 * image in a new container; past its startup timeout, released as Failed/StartupTimeout with its
 * pod to be replaced (ADR 0025), in one patch guarded by resourceVersion and the starting phase: a
 * start that completed meanwhile makes it fail, so a sandbox that ran is never recorded as a
 * startup failure, and the record is stored (then the pod deleted) by complete-stopping from the
 * stop metadata the release wrote. Otherwise its diagnostic annotation is kept current (e.g.
 * ImagePullBackOff at once, Pulling after SLOW_PULL_MS), written only when it changed. With
 * leaveToWaiters (the reconcile runs, not the waiting create), a start whose create still waits
 * for it (waiter-until in the future) is left to that create (ADR 0022), and so is the note of
 * its plain slow pull (the create answers from the live pod).
 */
export function planStarting(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  digests: ReadonlyMap<string, string>,
  now: Date,
  opts: { leaveToWaiters?: boolean } = {},
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod) || sandboxPhaseOf(pod) !== SANDBOX_PHASE.STARTING) return [];
    const { state } = readInplaceState(pod);
    if (state && isUpdateComplete(pod, state, digests)) {
      // Its create waits for it and completes the start itself: a second patch would only lose.
      if (opts.leaveToWaiters && waitedUntil(pod, now)) return [];
      const result = completeStartingIntent(pod, now);
      return result.ok
        ? [
            {
              target: podTarget(pod),
              why: "sandbox is running",
              write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
              ...observations(["starting", podPhaseDuration(pod, SANDBOX_PHASE.STARTING, now)]),
            },
          ]
        : [];
    }
    const detail = buildStatusDetail(pod, now);
    const limit = startupTimeoutMs(pool, pod);
    const elapsed = podPhaseDuration(pod, SANDBOX_PHASE.STARTING, now) ?? 0;
    if (limit !== undefined && elapsed > limit) {
      const message = `still starting after ${Math.round(elapsed / 1000)} s (limit ${Math.round(limit / 1000)} s)${detail ? `: ${detail.reason}: ${detail.message}` : ""}`;
      const release = releaseIntent(
        pod,
        {
          ...podReset(pool),
          replaceBecause: "its start timed out",
          expectPhase: SANDBOX_PHASE.STARTING,
          stopReason: STOP_REASON.FAILED,
          failureReason: "StartupTimeout",
          failureMessage: message,
        },
        now,
      );
      if (!release.ok) return [];
      return [
        {
          target: podTarget(pod),
          why: `end sandbox start: ${message}`,
          write: { op: "patch", patch: toJsonPatch(pod, release.intent) },
          event: { type: "Warning", reason: "StartupTimeout", action: "Release", note: message },
        },
      ];
    }
    if (!detail || (detail.reason === "Pulling" && elapsed < SLOW_PULL_MS)) return [];
    // A slow pull whose create still waits is not written either: that create answers from the
    // live pod, and every host's run would race to write the same note (in bench:hosts' bursts,
    // 0.2 lost patches per sandbox at 3 hosts). A start that fails (ImagePullBackOff) is written.
    if (detail.reason === "Pulling" && opts.leaveToWaiters && waitedUntil(pod, now)) return [];
    const previous = currentDetail(pod);
    if (previous?.reason === detail.reason && previous.message === detail.message) return [];
    const path = `/metadata/annotations/${escapePointer(SANDBOX_STATUS_DETAIL_ANNOTATION)}`;
    return [
      {
        target: podTarget(pod),
        why: `diagnose: ${detail.reason}`,
        write: { op: "patch", patch: [testVersion(pod), { op: "add", path, value: JSON.stringify(detail) }] },
        ...(detail.reason === "ImagePullBackOff" || detail.reason === "ErrImagePull"
          ? {
              event: {
                type: "Warning" as const,
                reason: detail.reason,
                action: "Pull",
                note: detail.message,
              },
            }
          : {}),
      },
    ];
  });
}

/** currentDetail reads the pod's diagnostic annotation; a garbled one reads as absent. */
function currentDetail(pod: V1Pod): { reason?: string; message?: string } | undefined {
  const raw = pod.metadata?.annotations?.[SANDBOX_STATUS_DETAIL_ANNOTATION];
  try {
    return raw ? (JSON.parse(raw) as { reason?: string; message?: string }) : undefined;
  } catch {
    return undefined;
  }
}

/** waitedUntil says whether the pod's create still waits for it at `now` (WAITER_UNTIL_ANNOTATION). */
export function waitedUntil(pod: V1Pod, now: Date): boolean {
  const until = Date.parse(pod.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION] ?? "");
  return Number.isFinite(until) && until > now.getTime();
}
