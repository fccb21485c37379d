// What the tick does with each SandboxSnapshot: the convergence of pauses and resumes whose caller
// is gone (a host killed mid-pause or mid-resume), the retention of paused sandboxes, and the
// leftovers of sandboxes that ended. Pure: the snapshot, the pods that carry its sandbox id (and
// the pod its pause recorded), and `now`.
import type { V1Pod } from "@kubernetes/client-node";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import { isTerminating } from "../kube/action.ts";
import { abandonPause, commitOverdue, type PauseAbandon } from "./abandoned-pause.ts";
import { endUnrecorded } from "./lifecycle-events.ts";
import { runsSource } from "./pause-plan.ts";
import { claimedBy, isCommitted, isFailed, pauseReleases, phaseOf } from "./snapshot-state.ts";

/** SnapshotSweep is the tick's next write for one snapshot. */
export type SnapshotSweep =
  | { kind: "none" }
  | { kind: "complete-pause" }
  | { kind: "resumed"; pod: string }
  | { kind: "back-to-paused" }
  | { kind: "record-ended" }
  | PauseAbandon
  | { kind: "delete"; why: string; record: boolean };

/**
 * snapshotSweep decides one snapshot's convergence:
 * - a committed pause, or a Paused one whose pod its pause still has to release (pauseReleases)
 *   → completePause;
 * - a pause that will not complete → undone as its caller would (abandonPause): its commit failed
 *   and nobody took it back, its deadline passed uncommitted, or its pod stopped running the
 *   sandbox as recorded (ended, or a container restarted);
 * - a Resuming one past its time → Resumed when a pod carries the resume's attempt, else Paused;
 * - a Paused one past its retention → deleted, with the terminal record (it ended unresumed);
 * - a Resumed one no pod carries → deleted (its end was not seen by the release);
 * - a Paused one being deleted whose terminal record is not known written (endUnrecorded) → written
 *   (kept once), dated by its deletion, then status.recorded.ended.
 * `byId` are the live pods with the sandbox's id label; `sourcePod` is the pod the pause recorded.
 */
export function snapshotSweep(
  s: SandboxSnapshot,
  byId: readonly V1Pod[],
  sourcePod: V1Pod | undefined,
  now: Date,
): SnapshotSweep {
  // A Paused one being deleted ended paused (a kill, its retention): its deleter may have died, or
  // found the history down, before writing its terminal record; the agent keeps the object until
  // status.recorded.ended says it is written.
  if (s.metadata?.deletionTimestamp) return endUnrecorded(s) ? { kind: "record-ended" } : { kind: "none" };
  const id = s.spec.sandboxId;
  const phase = phaseOf(s);
  const runs = runsSource(sourcePod, id, s.spec.source);
  const live = byId.filter((p) => !isTerminating(p));
  if (isCommitted(s)) return { kind: "complete-pause" };
  if (phase === SNAPSHOT_PHASE.PAUSED) {
    if (pauseReleases(s, sourcePod)) return { kind: "complete-pause" };
    const until = Date.parse(s.spec.retainUntil ?? "");
    if (Number.isFinite(until) && until <= now.getTime())
      return { kind: "delete", why: "its retention ended unresumed", record: true };
    return { kind: "none" };
  }
  if (isFailed(s)) return abandonPause(s, sourcePod, "its pause failed");
  if (
    phase === SNAPSHOT_PHASE.COMMITTING ||
    phase === SNAPSHOT_PHASE.COMMITTED ||
    phase === SNAPSHOT_PHASE.FAILED
  ) {
    if (!runs) return abandonPause(s, sourcePod, "a container restarted while pausing");
    return commitOverdue(s, now)
      ? abandonPause(s, sourcePod, "its commit did not finish by the pause's deadline")
      : { kind: "none" };
  }
  if (phase === SNAPSHOT_PHASE.RESUMING) {
    const until = Date.parse(s.status?.resume?.until ?? "");
    if (Number.isFinite(until) && until > now.getTime()) return { kind: "none" };
    const claimed = claimedBy(s, live);
    return claimed ? { kind: "resumed", pod: claimed.metadata?.name ?? "" } : { kind: "back-to-paused" };
  }
  if (phase === SNAPSHOT_PHASE.RESUMED && live.length === 0)
    return { kind: "delete", why: "its resumed sandbox ended", record: false };
  return { kind: "none" };
}
