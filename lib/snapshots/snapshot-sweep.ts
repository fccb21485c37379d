// What the tick does with each SandboxSnapshot: the convergence of pauses and resumes whose caller
// is gone (a host killed mid-pause or mid-resume), the retention of paused sandboxes, and the
// leftovers of sandboxes that ended. Pure: the snapshot, the pods that carry its sandbox id (and
// the pod its pause recorded), and `now`.
import type { V1Pod } from "@kubernetes/client-node";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import { isTerminating } from "../kube/action.ts";
import { runsSource } from "./pause-plan.ts";
import { claimedBy, isCommitted, isFailed, phaseOf } from "./snapshot-state.ts";

/** SnapshotSweep is the tick's next write for one snapshot. */
export type SnapshotSweep =
  | { kind: "none" }
  | { kind: "complete-pause" }
  | { kind: "resumed"; pod: string }
  | { kind: "back-to-paused" }
  | { kind: "back-to-resumed" }
  | { kind: "delete"; why: string; record: boolean };

/**
 * snapshotSweep decides one snapshot's convergence:
 * - a committed pause, or a Paused one whose pod still runs the sandbox → completePause;
 * - a failed pause nobody took back (its caller gone) → as the caller would: a sandbox never
 *   resumed loses the snapshot, a resumed one goes back to Resumed;
 * - a pause whose pod no longer runs the sandbox before the commit → deleted (the sandbox ended);
 * - a Resuming one past its time → Resumed when a pod carries the resume's attempt, else Paused;
 * - a Paused one past its retention → deleted, with the terminal record (it ended unresumed);
 * - a Resumed one no pod carries → deleted (its end was not seen by the release).
 * `byId` are the live pods with the sandbox's id label; `sourcePod` is the pod the pause recorded.
 */
export function snapshotSweep(
  s: SandboxSnapshot,
  byId: readonly V1Pod[],
  sourcePod: V1Pod | undefined,
  now: Date,
): SnapshotSweep {
  if (s.metadata?.deletionTimestamp) return { kind: "none" };
  const id = s.spec.sandboxId;
  const phase = phaseOf(s);
  const runs = runsSource(sourcePod, id, s.spec.source);
  const live = byId.filter((p) => !isTerminating(p));
  if (isCommitted(s)) return { kind: "complete-pause" };
  if (phase === SNAPSHOT_PHASE.PAUSED) {
    if (runs) return { kind: "complete-pause" };
    const until = Date.parse(s.spec.retainUntil ?? "");
    if (Number.isFinite(until) && until <= now.getTime())
      return { kind: "delete", why: "its retention ended unresumed", record: true };
    return { kind: "none" };
  }
  if (isFailed(s)) {
    if ((s.status?.resumes ?? 0) > 0) return { kind: "back-to-resumed" };
    return { kind: "delete", why: "its pause failed", record: false };
  }
  if (
    phase === SNAPSHOT_PHASE.COMMITTING ||
    phase === SNAPSHOT_PHASE.COMMITTED ||
    phase === SNAPSHOT_PHASE.FAILED
  )
    return runs ? { kind: "none" } : { kind: "delete", why: "it ended while pausing", record: false };
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
