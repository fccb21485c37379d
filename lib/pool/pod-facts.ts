// The few facts about a sandbox Pod that pool decisions read, extracted in one place so the scale
// plan and the status agree on what "terminating", "idle" and "ready" mean.
import type { V1Pod } from "@kubernetes/client-node";
import {
  REPLACE_ON_RESET_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SCALE_DOWN_PROTECTED_ANNOTATION,
} from "../crd/keys.ts";
import { parseTime } from "../util/time.ts";

/** PodFacts is what pool decisions need to know about one Pod. */
export interface PodFacts {
  name: string;
  /** phase is the raw SANDBOX_PHASE_LABEL value; undefined when the label is missing. */
  phase: string | undefined;
  /** terminating: deletion was requested (deletionTimestamp set); the Pod is on its way out. */
  terminating: boolean;
  /**
   * replaced: stopping and marked REPLACE_ON_RESET_ANNOTATION: it is deleted once its sandbox's
   * record is stored and never serves again, so its successor need not wait for the delete.
   */
  replaced: boolean;
  /** ready: the PodReady condition is True (an idle Pod that is not ready cannot take a claim). */
  ready: boolean;
  /** scaleDownMark is the raw SCALE_DOWN_PROTECTED_ANNOTATION value, when present. */
  scaleDownMark: string | undefined;
  /** scaleDownMarkedAt is that value parsed; undefined when absent or unparseable. */
  scaleDownMarkedAt: Date | undefined;
}

/**
 * podFacts reads a Pod's name, sandbox phase, deletion state (or pending replacement), readiness
 * and scale-down mark. A missing PodReady condition counts as not ready (the Pod is still
 * scheduling or pulling).
 */
export function podFacts(pod: V1Pod): PodFacts {
  const meta = pod.metadata ?? {};
  const mark = meta.annotations?.[SCALE_DOWN_PROTECTED_ANNOTATION] || undefined;
  const readyCondition = pod.status?.conditions?.find((c) => c.type === "Ready");
  const phase = meta.labels?.[SANDBOX_PHASE_LABEL];
  return {
    name: meta.name ?? "",
    phase,
    terminating: meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null,
    replaced: phase === SANDBOX_PHASE.STOPPING && Boolean(meta.annotations?.[REPLACE_ON_RESET_ANNOTATION]),
    ready: readyCondition?.status === "True",
    scaleDownMark: mark,
    scaleDownMarkedAt: parseTime(mark),
  };
}

/**
 * claimableState says whether a pod is in a claimable state: phase label idle, not terminating,
 * PodReady True and status.phase Running. Whose pod it is, is not its concern: orderCandidates and
 * pickIdle also ask ownedBy.
 */
export function claimableState(pod: V1Pod): boolean {
  const facts = podFacts(pod);
  return (
    facts.phase === SANDBOX_PHASE.IDLE && !facts.terminating && facts.ready && pod.status?.phase === "Running"
  );
}
