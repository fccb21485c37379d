// Events about a pool's phase changes, for `kubectl describe sbp` and `kubectl events`: one per
// transition, never one per run, so a pool that stays Degraded does not flood the event stream.
// Likewise one Warning per foreign Pod (lib/reconcile/foreign-pods.ts), not one per run, and one
// Event per rollout's start and end (rolloutAnnouncement).
import type { SandboxPoolPhase, SandboxPoolStatus } from "../crd/sandbox-pool.ts";

/**
 * PoolEventIntent is the part of an events.k8s.io/v1 Event this module decides; the emitting
 * step adds regarding (the pool), eventTime, reportingController/Instance and a name.
 */
export interface PoolEventIntent {
  type: "Normal" | "Warning";
  reason: string;
  action: string;
  note: string;
}

/** PhaseEventDetail optionally gives the counts that make a note specific. */
export interface PhaseEventDetail {
  replicas: number;
  status: SandboxPoolStatus;
}

function podCount(s: SandboxPoolStatus): number {
  return (
    (s.idleReplicas ?? 0) +
    (s.runningReplicas ?? 0) +
    (s.startingReplicas ?? 0) +
    (s.stoppingReplicas ?? 0) +
    (s.failedReplicas ?? 0)
  );
}

/**
 * phaseTransitionEvent is the event for a pool moving from `prev` to `next` (prev undefined: the
 * first status), or undefined when the phase did not change or the new phase is not worth an
 * event (Pending, Terminating: the pool's own creation and deletion already tell). Entering
 * Degraded is a Warning (failed or NotReady idle Pods need attention); everything else is
 * Normal. Reasons and actions are agentbox's: ScalingUp/ScaleUp, ScalingDown/ScaleDown,
 * PoolReady/Sync, PoolRecovered/Recover (Ready after Degraded), Degraded/Degraded.
 */
export function phaseTransitionEvent(
  prev: SandboxPoolPhase | undefined,
  next: SandboxPoolPhase | undefined,
  detail?: PhaseEventDetail,
): PoolEventIntent | undefined {
  if (next === undefined || prev === next) return undefined;
  const s = detail?.status;
  const replicas = detail?.replicas;
  const from = s ? `${podCount(s)} ` : "";
  const to = replicas === undefined ? "the desired count of" : `${replicas}`;
  switch (next) {
    case "ScalingUp":
      return {
        type: "Normal",
        reason: "ScalingUp",
        action: "ScaleUp",
        note: `Scaling up pool from ${from}to ${to} replicas`,
      };
    case "ScalingDown":
      return {
        type: "Normal",
        reason: "ScalingDown",
        action: "ScaleDown",
        note: `Scaling down pool from ${from}to ${to} replicas${s ? `; ${s.runningReplicas ?? 0} running pod(s) must be released first` : ""}`,
      };
    case "Ready": {
      const note = `Pool reached desired state: ${to} replicas${s ? `, ${s.idleReplicas ?? 0} idle` : ""}`;
      return prev === "Degraded"
        ? { type: "Normal", reason: "PoolRecovered", action: "Recover", note }
        : { type: "Normal", reason: "PoolReady", action: "Sync", note };
    }
    case "Degraded":
      return {
        type: "Warning",
        reason: "Degraded",
        action: "Degraded",
        note: s
          ? `Pool degraded: ${s.failedReplicas ?? 0} failed pod(s), ${s.unavailableIdleReplicas ?? 0} idle pod(s) not ready`
          : "Pool degraded: failed pods or idle pods that are not ready",
      };
    default:
      return undefined;
  }
}

/**
 * foreignPodEvent is the Warning about a Pod that carries the pool's label without the pool
 * controlling it (lib/membership/pod-ownership.ts): whoever made it, the pool ignores it.
 */
export function foreignPodEvent(pod: { name: string; uid: string }, poolUid: string): PoolEventIntent {
  return {
    type: "Warning",
    reason: "ForeignPod",
    action: "Ignore",
    note: `Pod ${pod.name} (uid ${pod.uid}) carries this pool's label but no controller ownerReference to this pool (uid ${poolUid}); it is ignored: never claimed, counted, finalized, released or deleted`,
  };
}

/** RolloutAnnouncement is a rollout Event and the status fields whose stored values key it. */
export interface RolloutAnnouncement {
  event: PoolEventIntent;
  /** tested: the fields as stored now; the announcing write tests them, so one host announces. */
  tested: Pick<SandboxPoolStatus, "outdatedReplicas" | "updateRevision">;
}

/**
 * rolloutAnnouncement is the Event for a rollout that starts or ends between the stored status
 * and the next (ADR 0031), or undefined: RolloutStarted when pods became outdated (none were) or
 * the pods are being rolled to another revision than the stored one; RolloutCompleted when the
 * last outdated pod went. Keyed on the stored outdatedReplicas and updateRevision (a status
 * without them, e.g. before rollouts existed, announces nothing), so each start and end is
 * announced once whichever host sees it: only the write that finds them unchanged succeeds.
 */
export function rolloutAnnouncement(
  previous: SandboxPoolStatus | undefined,
  next: SandboxPoolStatus,
  detail: { replicas: number; maxSurge: number },
): RolloutAnnouncement | undefined {
  const was = previous?.outdatedReplicas;
  const from = previous?.updateRevision;
  const outdated = next.outdatedReplicas ?? 0;
  const revision = next.updateRevision;
  if (was === undefined || from === undefined || revision === undefined) return undefined;
  const tested = { outdatedReplicas: was, updateRevision: from };
  if (outdated > 0 && (was === 0 || from !== revision))
    return {
      tested,
      event: {
        type: "Normal",
        reason: "RolloutStarted",
        action: "Rollout",
        note: `Rolling out pod revision ${revision} (was ${from}): ${outdated} outdated pod(s); new pods first, up to ${detail.maxSurge} beyond ${detail.replicas} replicas; running sandboxes keep their pods, replaced once released`,
      },
    };
  if (outdated === 0 && was > 0)
    return {
      tested,
      event: {
        type: "Normal",
        reason: "RolloutCompleted",
        action: "Rollout",
        note: `Every pod is at pod revision ${revision} (${next.updatedReplicas ?? 0} pod(s))`,
      },
    };
  return undefined;
}
