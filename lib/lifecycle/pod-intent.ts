// What a phase transition changes on a pod, as plain data: the intents' builders return it, the
// patch builder (intent-patch.ts) turns it into a JSON patch.
import type { SandboxPhase } from "../crd/keys.ts";

/**
 * PodIntent is a transition's exact metadata change: what the phase label must be now, the
 * labels and annotations to set or remove, and container name → new image. The new phase is
 * in setLabels like any other label. Plain data, so it can be logged, compared and tested.
 */
export interface PodIntent {
  expectPhase: SandboxPhase;
  setLabels: Record<string, string>;
  removeLabels: string[];
  setAnnotations: Record<string, string>;
  removeAnnotations: string[];
  containerImages: Record<string, string>;
}

/** IntentResult is an intent, or why the transition cannot be built from this pod and input. */
export type IntentResult = { ok: true; intent: PodIntent } | { ok: false; reason: string };
