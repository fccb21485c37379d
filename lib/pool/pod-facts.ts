// The few facts about a sandbox Pod that pool decisions read, extracted in one place so the scale
// plan and the status agree on what "terminating", "idle" and "ready" mean.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE_LABEL, SCALE_DOWN_PROTECTED_ANNOTATION } from "../api/keys.ts";
import { parseTime } from "../util/time.ts";

/** PodFacts is what pool decisions need to know about one Pod. */
export interface PodFacts {
  name: string;
  /** phase is the raw SANDBOX_PHASE_LABEL value; undefined when the label is missing. */
  phase: string | undefined;
  /** terminating: deletion was requested (deletionTimestamp set); the Pod is on its way out. */
  terminating: boolean;
  /** ready: the PodReady condition is True (an idle Pod that is not ready cannot take a claim). */
  ready: boolean;
  /** scaleDownMark is the raw SCALE_DOWN_PROTECTED_ANNOTATION value, when present. */
  scaleDownMark: string | undefined;
  /** scaleDownMarkedAt is that value parsed; undefined when absent or unparseable. */
  scaleDownMarkedAt: Date | undefined;
}

/**
 * podFacts reads a Pod's name, sandbox phase, deletion state, readiness and scale-down mark. A
 * missing PodReady condition counts as not ready (the Pod is still scheduling or pulling).
 */
export function podFacts(pod: V1Pod): PodFacts {
  const meta = pod.metadata ?? {};
  const mark = meta.annotations?.[SCALE_DOWN_PROTECTED_ANNOTATION] || undefined;
  const readyCondition = pod.status?.conditions?.find((c) => c.type === "Ready");
  return {
    name: meta.name ?? "",
    phase: meta.labels?.[SANDBOX_PHASE_LABEL],
    terminating: meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null,
    ready: readyCondition?.status === "True",
    scaleDownMark: mark,
    scaleDownMarkedAt: parseTime(mark),
  };
}
