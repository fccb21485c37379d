// The sandbox phase machine as data, and the intent type every transition is expressed in.
// A transition is decided purely (claim-intent.ts, complete-intent.ts, release-intent.ts) and
// written as one JSON Patch guarded by resourceVersion and the expected phase (intent-patch.ts),
// so a step that runs twice or races another replica fails its precondition instead of acting.
import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxStatusDetail } from "../crd/annotations.ts";
import {
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  type SandboxPhase,
} from "../crd/keys.ts";
import { sandboxPhaseOf } from "./phase-label.ts";
import type { IntentResult } from "./pod-intent.ts";

/** TransitionTrigger says what moves a pod along an edge of the phase machine. */
export type TransitionTrigger = "claim" | "complete" | "release" | "fail";

/** PhaseTransition is one legal edge of the sandbox phase machine. */
export interface PhaseTransition {
  from: SandboxPhase;
  to: SandboxPhase;
  via: TransitionTrigger;
}

const { IDLE, STARTING, RUNNING, STOPPING, FAILED } = SANDBOX_PHASE;

/**
 * PHASE_TRANSITIONS lists every legal phase change. Claims swap the image (idle → starting) or,
 * when the pod already runs the requested images, skip the pull (idle → running). Releases reset
 * a running sandbox, or cancel one still starting. Updates complete into their target phase. Any
 * live phase may be marked failed; failed is terminal (the pod is deleted, never reused).
 */
export const PHASE_TRANSITIONS: readonly PhaseTransition[] = [
  { from: IDLE, to: STARTING, via: "claim" },
  { from: IDLE, to: RUNNING, via: "claim" },
  { from: STARTING, to: RUNNING, via: "complete" },
  { from: STARTING, to: STOPPING, via: "release" },
  { from: RUNNING, to: STOPPING, via: "release" },
  { from: STOPPING, to: IDLE, via: "complete" },
  { from: IDLE, to: FAILED, via: "fail" },
  { from: STARTING, to: FAILED, via: "fail" },
  { from: RUNNING, to: FAILED, via: "fail" },
  { from: STOPPING, to: FAILED, via: "fail" },
];

/** transitionTrigger is what moves a pod from `from` to `to`, or undefined if that is illegal. */
export function transitionTrigger(from: SandboxPhase, to: SandboxPhase): TransitionTrigger | undefined {
  return PHASE_TRANSITIONS.find((t) => t.from === from && t.to === to)?.via;
}

/** isLegalTransition tells whether the phase machine allows `from` → `to`. */
export function isLegalTransition(from: SandboxPhase, to: SandboxPhase): boolean {
  return transitionTrigger(from, to) !== undefined;
}

export type { IntentResult, PodIntent } from "./pod-intent.ts";

/**
 * failIntent marks a live pod failed (any phase but failed), optionally with the diagnostic that
 * explains it, so pools stop handing it out and the failed-pod cleanup can delete it.
 */
export function failIntent(pod: V1Pod, detail?: SandboxStatusDetail): IntentResult {
  const phase = sandboxPhaseOf(pod);
  if (phase === undefined || !isLegalTransition(phase, SANDBOX_PHASE.FAILED))
    return { ok: false, reason: `pod is ${phase ?? "not in a sandbox phase"}; cannot mark it failed` };
  return {
    ok: true,
    intent: {
      expectPhase: phase,
      setLabels: { [SANDBOX_PHASE_LABEL]: SANDBOX_PHASE.FAILED },
      removeLabels: [],
      setAnnotations: detail ? { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(detail) } : {},
      removeAnnotations: [],
      containerImages: {},
    },
  };
}

// The builders live in their own modules (each small); re-exported so transitions.ts is the one
// entry point for callers.
export { type ClaimOptions, claimIntent } from "./claim-intent.ts";
export { completeStartingIntent, completeStoppingIntent } from "./complete-intent.ts";
export { type JsonPatchOperation, toJsonPatch } from "./intent-patch.ts";
export { type ReleaseOptions, releaseIntent } from "./release-intent.ts";
