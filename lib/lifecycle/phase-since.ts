// Timeouts (startup, stopping, idle scale-down) are measured from when a pod entered its current
// sandbox phase. No clock is read here: callers pass `now`, so a decision can be replayed.
import type { V1Pod } from "@kubernetes/client-node";
import { INPLACE_UPDATE_PHASE, SANDBOX_PHASE, type SandboxPhase } from "../crd/keys.ts";
import { parseTime } from "../util/time.ts";
import { readInplaceState } from "./inplace-state.ts";
import { sandboxPhaseOf } from "./phase-label.ts";

/**
 * podPhaseSince returns when the pod entered `phase` (default: its current phase), or undefined
 * when the pod is not in that phase now. Starting/Stopping use the state's updateTimestamp of the
 * matching in-flight update; Running/Idle use the completed state's timestamp when the update
 * targeted that phase. Otherwise (fresh idle pod, failed pod, missing or unreadable state) it
 * falls back to metadata.creationTimestamp, so timeouts still fire on a pod whose state is lost.
 */
export function podPhaseSince(pod: V1Pod, phase?: SandboxPhase): Date | undefined {
  const current = sandboxPhaseOf(pod);
  const wanted = phase ?? current;
  if (current === undefined || wanted !== current) return undefined;

  const { state } = readInplaceState(pod);
  const stamp = parseTime(state?.updateTimestamp);
  if (state && stamp) {
    switch (wanted) {
      case SANDBOX_PHASE.STARTING:
      case SANDBOX_PHASE.STOPPING:
        if (state.phase === wanted) return stamp;
        break;
      case SANDBOX_PHASE.RUNNING:
      case SANDBOX_PHASE.IDLE:
        if (state.phase === INPLACE_UPDATE_PHASE.COMPLETED && (state.targetPodPhase || wanted) === wanted)
          return stamp;
        break;
    }
  }
  return parseTime(pod.metadata?.creationTimestamp);
}

/**
 * podPhaseDuration is how long (milliseconds) the pod has been in `phase` at `now`, or undefined
 * when it is not in that phase or no start time is known. Clock skew between the writer and
 * `now` never yields a negative duration.
 */
export function podPhaseDuration(pod: V1Pod, phase: SandboxPhase | undefined, now: Date): number | undefined {
  const since = podPhaseSince(pod, phase);
  return since === undefined ? undefined : Math.max(0, now.getTime() - since.getTime());
}
