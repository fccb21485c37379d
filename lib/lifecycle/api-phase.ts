// Which sandbox a pod holds and the phase the API shows for it. The router's thread reads these
// for every pod its watch reports, and the API's views (view.ts) and stop records use the same
// rules, so a sandbox the API calls Running is exactly one the router routes to.
import type { V1Pod } from "@kubernetes/client-node";
import {
  POST_START_HOOKS_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_PHASE,
  type SandboxPhase,
} from "../crd/keys.ts";
import { sandboxPhaseOf } from "./phase-label.ts";

/** sandboxIdOf is the pod's sandbox id: the annotation, else the label (a pod mid-claim has one). */
export function sandboxIdOf(pod: V1Pod): string | undefined {
  return pod.metadata?.annotations?.[SANDBOX_ID_ANNOTATION] || pod.metadata?.labels?.[SANDBOX_ID_LABEL];
}

/**
 * apiPhaseOf is the phase the API shows: the phase label, except that a Running pod whose
 * post-start hooks have not run yet (envd /init: env vars, token) is still Starting.
 */
export function apiPhaseOf(pod: V1Pod): SandboxPhase | undefined {
  const phase = sandboxPhaseOf(pod);
  const pending =
    phase === SANDBOX_PHASE.RUNNING && pod.metadata?.annotations?.[POST_START_HOOKS_ANNOTATION] !== undefined;
  return pending ? SANDBOX_PHASE.STARTING : phase;
}
