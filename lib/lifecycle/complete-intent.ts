// Finishing an in-place update moves the phase label to the update's target in the same patch
// that marks the state completed, so "running" always means the new containers run, and "idle"
// always means nothing of the previous sandbox is left on the pod.
import type { V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../crd/annotations.ts";
import {
  END_AT_ANNOTATION,
  INPLACE_UPDATE_PHASE,
  INPLACE_UPDATE_STATE_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  LIFETIME_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  STARTED_AT_ANNOTATION,
} from "../crd/keys.ts";
import { rfc3339 } from "../util/time.ts";
import { stableContainerStatuses, targetImagesOf } from "./completion.ts";
import { encodeInplaceState, readInplaceState } from "./inplace-state.ts";
import { managedKeys, SANDBOX_ANNOTATIONS, SANDBOX_LABELS, unique } from "./lifecycle-keys.ts";
import { sandboxPhaseOf } from "./phase-label.ts";
import type { IntentResult } from "./pod-intent.ts";

type UpdatingPhase = typeof SANDBOX_PHASE.STARTING | typeof SANDBOX_PHASE.STOPPING;

/** inFlightState returns the pod's state when pod and state are both in `phase`, else a reason. */
function inFlightState(pod: V1Pod, phase: UpdatingPhase): { state: InplaceUpdateState } | { reason: string } {
  const current = sandboxPhaseOf(pod);
  if (current !== phase) return { reason: `pod is ${current ?? "not in a sandbox phase"}, not ${phase}` };
  const read = readInplaceState(pod);
  if (!read.state) return { reason: read.reason ?? "pod has no in-place update state" };
  if (read.state.phase !== phase) return { reason: `in-place update is ${read.state.phase}, not ${phase}` };
  return { state: read.state };
}

/**
 * completedState copies a state as completed at `at`, without the in-flight snapshots; a reset
 * (towards idle) keeps lastContainerStatuses, the containers it replaced, so a claim can tell the
 * fresh containers from those that served (servedContainers).
 */
function completedState(state: InplaceUpdateState, at: string): InplaceUpdateState {
  const next: InplaceUpdateState = { ...state, phase: INPLACE_UPDATE_PHASE.COMPLETED, updateTimestamp: at };
  if (state.targetPodPhase !== SANDBOX_PHASE.IDLE) delete next.lastContainerStatuses;
  delete next.stableContainerStatuses;
  return next;
}

/**
 * completeStartingIntent moves a starting pod to running once isUpdateComplete says so (the
 * caller checks; this builder only reads the pod). The state becomes completed with a snapshot of
 * the target containers' ids for hasUnexpectedRestart; started-at and last-active are set to now,
 * so the idle timeout counts from the moment the sandbox became usable.
 */
export function completeStartingIntent(pod: V1Pod, now: Date): IntentResult {
  const found = inFlightState(pod, SANDBOX_PHASE.STARTING);
  if ("reason" in found) return { ok: false, reason: found.reason };
  const at = rfc3339(now);
  const state: InplaceUpdateState = {
    ...completedState(found.state, at),
    stableContainerStatuses: stableContainerStatuses(pod, targetImagesOf(pod, found.state)),
  };
  // A lifetime counts from the start: end-at becomes now + lifetime (see LIFETIME_ANNOTATION).
  const lifetime = Number(pod.metadata?.annotations?.[LIFETIME_ANNOTATION]);
  const endAt: Record<string, string> =
    Number.isFinite(lifetime) && lifetime > 0
      ? { [END_AT_ANNOTATION]: rfc3339(new Date(now.getTime() + lifetime * 1000)) }
      : {};
  return {
    ok: true,
    intent: {
      expectPhase: SANDBOX_PHASE.STARTING,
      setLabels: { [SANDBOX_PHASE_LABEL]: SANDBOX_PHASE.RUNNING },
      removeLabels: [],
      setAnnotations: {
        [STARTED_AT_ANNOTATION]: at,
        [LAST_ACTIVE_ANNOTATION]: at,
        [INPLACE_UPDATE_STATE_ANNOTATION]: encodeInplaceState(state),
        ...endAt,
      },
      removeAnnotations:
        pod.metadata?.annotations?.[LIFETIME_ANNOTATION] !== undefined ? [LIFETIME_ANNOTATION] : [],
      containerImages: {},
    },
  };
}

/**
 * completeStoppingIntent moves a stopping pod back to idle once its idle images run (the caller
 * checks isUpdateComplete and writes the stop record first: captureStopRecord needs the stop
 * metadata this removes). Every label and annotation of the finished sandbox goes: sandbox-id,
 * managed-by, team/user, the caller's managed keys, timing, timeouts, metadata, hooks, stop
 * metadata, snapshots and diagnostics.
 */
export function completeStoppingIntent(pod: V1Pod, now: Date): IntentResult {
  const found = inFlightState(pod, SANDBOX_PHASE.STOPPING);
  if ("reason" in found) return { ok: false, reason: found.reason };
  const state = completedState(found.state, rfc3339(now));
  return {
    ok: true,
    intent: {
      expectPhase: SANDBOX_PHASE.STOPPING,
      setLabels: { [SANDBOX_PHASE_LABEL]: SANDBOX_PHASE.IDLE },
      removeLabels: unique([...SANDBOX_LABELS, ...managedKeys(pod, MANAGED_LABEL_KEYS_ANNOTATION)]),
      setAnnotations: { [INPLACE_UPDATE_STATE_ANNOTATION]: encodeInplaceState(state) },
      removeAnnotations: unique([
        ...SANDBOX_ANNOTATIONS,
        ...managedKeys(pod, MANAGED_ANNOTATION_KEYS_ANNOTATION),
      ]),
      containerImages: {},
    },
  };
}
