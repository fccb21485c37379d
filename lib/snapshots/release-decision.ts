// What the release of a resumed sandbox's pod does to its SandboxSnapshot, decided from the pod
// and the snapshot: the end of the sandbox deletes it (the agent then deletes its images); a
// resume that never got its sandbox running gives it back to Paused (its files are still only in
// the snapshot); a pod that is not the snapshot's resume (a lost race) leaves it alone.
import type { V1Pod } from "@kubernetes/client-node";
import {
  RESUME_ATTEMPT_ANNOTATION,
  SANDBOX_ID_LABEL,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
  STOP_REASON_ANNOTATION,
} from "../crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import { incarnationOf } from "../lifecycle/incarnation.ts";
import { phaseOf } from "./snapshot-state.ts";

/** SnapshotAtRelease is the snapshot write a stopping pod needs before it goes back to idle. */
export type SnapshotAtRelease = { kind: "none" } | { kind: "delete" } | { kind: "back-to-paused" };

/**
 * isPauseOf: the snapshot records a pause of this very pod that has not become a resume (being
 * committed, committed, paused, failed): a kill that releases the pod ends that pause too.
 */
export function isPauseOf(s: SandboxSnapshot | undefined, pod: V1Pod): boolean {
  if (!s || s.metadata?.deletionTimestamp || s.spec.source.podUID !== pod.metadata?.uid) return false;
  const phase = phaseOf(s);
  return phase !== SNAPSHOT_PHASE.RESUMING && phase !== SNAPSHOT_PHASE.RESUMED;
}

/** needsSnapshotRead: the stopping pod ran a resumed sandbox and did not stop for a pause. */
export function needsSnapshotRead(pod: V1Pod): boolean {
  return (
    pod.metadata?.labels?.[SANDBOX_ID_LABEL] !== undefined &&
    pod.metadata?.annotations?.[STOP_REASON_ANNOTATION] !== STOP_REASON.PAUSED &&
    incarnationOf(pod) > 0
  );
}

/**
 * snapshotAtRelease: none when there is no snapshot, or it is not this pod's resume (another
 * attempt's, or being deleted already); back to Paused when this resume's pod never ran (a failed
 * pull, a startup timeout: the sandbox's files are still only in the snapshot, so it must stay
 * resumable); delete otherwise (the resumed sandbox ended).
 */
export function snapshotAtRelease(pod: V1Pod, s: SandboxSnapshot | undefined): SnapshotAtRelease {
  if (!s || s.metadata?.deletionTimestamp) return { kind: "none" };
  const attempt = pod.metadata?.annotations?.[RESUME_ATTEMPT_ANNOTATION];
  if (!attempt || s.status?.resume?.attempt !== attempt) return { kind: "none" };
  const phase = phaseOf(s);
  const started = pod.metadata?.annotations?.[STARTED_AT_ANNOTATION] !== undefined;
  if (!started && (phase === SNAPSHOT_PHASE.RESUMED || phase === SNAPSHOT_PHASE.RESUMING))
    return { kind: "back-to-paused" };
  return { kind: "delete" };
}
