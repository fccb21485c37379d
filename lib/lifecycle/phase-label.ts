// The sandbox phase label, read without throwing: another replica or version (or agentbox's Go
// controller) may have written a value this one does not know, which reads as no phase. Apart
// from the in-place state (inplace-state.ts) because it needs no schema: the router's thread
// reads it for every pod its watch reports.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, type SandboxPhase } from "../crd/keys.ts";

const PHASES = new Set<string>(Object.values(SANDBOX_PHASE));

/** sandboxPhaseOf is the pod's SANDBOX_PHASE_LABEL when it is a known phase, else undefined. */
export function sandboxPhaseOf(pod: V1Pod): SandboxPhase | undefined {
  const value = pod.metadata?.labels?.[SANDBOX_PHASE_LABEL];
  return value !== undefined && PHASES.has(value) ? (value as SandboxPhase) : undefined;
}
