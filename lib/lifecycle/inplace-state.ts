// The in-place update state is, with the sandbox phase label (phase-label.ts), one of the two facts
// every lifecycle step starts from. They are written by other replicas and other versions of the control plane (and
// by agentbox's Go controller), so reading them must never throw: a bad annotation is reported
// and treated as absent, and the caller decides what that means.
import type { V1Pod } from "@kubernetes/client-node";
import { InplaceUpdateState } from "../crd/annotations.ts";
import { INPLACE_UPDATE_STATE_ANNOTATION } from "../crd/keys.ts";
import { parseWith } from "../crd/parse-with.ts";

/** InplaceStateRead is the state when present and valid; otherwise why not (absent: no reason). */
export type InplaceStateRead =
  | { state: InplaceUpdateState; reason?: undefined }
  | { state: undefined; reason?: string };

/**
 * readInplaceState decodes the pod's INPLACE_UPDATE_STATE_ANNOTATION. Absent or empty gives
 * `{ state: undefined }`; malformed JSON or a shape that is not an InplaceUpdateState gives
 * `{ state: undefined, reason }`, so a corrupt annotation cannot crash a reconcile step.
 */
export function readInplaceState(pod: V1Pod): InplaceStateRead {
  const raw = pod.metadata?.annotations?.[INPLACE_UPDATE_STATE_ANNOTATION];
  if (raw === undefined || raw === "") return { state: undefined };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    return { state: undefined, reason: `${INPLACE_UPDATE_STATE_ANNOTATION}: invalid JSON: ${String(error)}` };
  }
  const parsed = parseWith(InplaceUpdateState, json);
  if (parsed.ok) return { state: parsed.value };
  const issues = parsed.issues.map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`));
  return { state: undefined, reason: `${INPLACE_UPDATE_STATE_ANNOTATION}: ${issues.join("; ")}` };
}

/**
 * encodeInplaceState renders a state as the annotation value. Undefined fields are dropped, as
 * Go's omitempty does, so the JSON reads the same whichever implementation wrote it.
 */
export function encodeInplaceState(state: InplaceUpdateState): string {
  return JSON.stringify(state);
}
