import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE, STOP_REASON } from "../crd/keys.ts";
import { type Action, guardedDelete, isTerminating, podTarget } from "../kube/action.ts";
import { hasUnexpectedRestart } from "../lifecycle/completion.ts";
import { readInplaceState } from "../lifecycle/inplace-state.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { type ResetSource, releaseIntent, resetFrom } from "../lifecycle/release-intent.ts";
import { captureStopRecord } from "../lifecycle/stop-record.ts";

/** lastTermination is the most recent container termination of a restarted sandbox, if any. */
function lastTermination(pod: V1Pod) {
  for (const c of pod.status?.containerStatuses ?? []) {
    const t = c.lastState?.terminated;
    if (t)
      return { container: c.name, reason: t.reason ?? "Error", exitCode: t.exitCode, message: t.message };
  }
  return undefined;
}

/**
 * planFailures handles pods that failed. A pod in phase Failed (evicted, or every container dead)
 * cannot serve again: its record is written and it is deleted, and the pool replaces it. A running
 * sandbox whose container was replaced behind our back (OOM kill, crash) is released with stop
 * reason Failed and the termination details, which puts the pod back through Stopping → Idle;
 * unless `held` names its pod (uid): a completed pause holds it and releases it as Paused.
 */
export function planFailures(
  pods: readonly V1Pod[],
  reset: ResetSource,
  now: Date,
  held: ReadonlySet<string> = new Set(),
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (isTerminating(pod)) return [];
    if (pod.status?.phase === "Failed") {
      const reason = pod.status.reason || "PodFailed";
      const message = pod.status.message || "the pod failed";
      const base = captureStopRecord(pod, now);
      const record = base && {
        ...base,
        stopReason: STOP_REASON.FAILED,
        failureReason: reason,
        failureMessage: message,
      };
      return [
        {
          target: podTarget(pod),
          why: `delete failed pod (${reason})`,
          ...(record ? { record } : {}),
          write: guardedDelete(pod),
          event: { type: "Warning", reason, action: "Delete", note: `pod failed: ${message}` },
        },
      ];
    }
    if (sandboxPhaseOf(pod) !== SANDBOX_PHASE.RUNNING || held.has(pod.metadata?.uid ?? "")) return [];
    const { state } = readInplaceState(pod);
    if (!state || !hasUnexpectedRestart(pod, state)) return [];
    const t = lastTermination(pod);
    const failureReason = t?.reason ?? "ContainerRestarted";
    const result = releaseIntent(
      pod,
      {
        ...resetFrom(reset),
        stopReason: STOP_REASON.FAILED,
        failureReason,
        failureMessage: t
          ? `container ${t.container} terminated (${t.reason}, exit code ${t.exitCode})${t.message ? `: ${t.message}` : ""}`
          : "a container restarted unexpectedly",
        ...(t?.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
      },
      now,
    );
    if (!result.ok) return [];
    return [
      {
        target: podTarget(pod),
        why: `release sandbox after an unexpected restart (${failureReason})`,
        write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
        event: {
          type: "Warning",
          reason: failureReason,
          action: "Release",
          note: `sandbox released: ${failureReason}`,
        },
      },
    ];
  });
}
