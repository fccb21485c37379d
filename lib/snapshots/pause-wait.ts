// What a pause's caller does with the snapshot it sees while it waits for its commit: the caller
// joined one generation of the snapshot, so only that generation's answer is its answer, and
// whatever another step did meanwhile (undid it, completed it, began a resume) is taken as done,
// never done again.
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import { commitOverdue } from "./abandoned-pause.ts";
import { COMMIT_WAIT_MS } from "./pause-plan.ts";
import { isCommitted, isFailed, phaseOf } from "./snapshot-state.ts";

/** UNANSWERED are the phases of a pause whose commit may not be answered for its generation yet. */
const UNANSWERED: ReadonlySet<string> = new Set([
  SNAPSHOT_PHASE.COMMITTING,
  SNAPSHOT_PHASE.COMMITTED,
  SNAPSHOT_PHASE.FAILED,
]);

/** PauseWait is the generation a caller waits on and the time it gives up waiting. */
export interface PauseWait {
  generation: number | undefined;
  /** deadline in ms: the pause's commitUntil, else COMMIT_WAIT_MS from the first read. */
  deadline: number;
  /** dated: the snapshot carries its own deadline (commitUntil), which every host agrees on. */
  dated: boolean;
}

/** pauseWait is what a caller waits on, from its first read of the snapshot after its write. */
export function pauseWait(first: SandboxSnapshot | undefined, now: Date): PauseWait {
  const until = Date.parse(String(first?.spec.source.commitUntil ?? ""));
  const dated = Number.isFinite(until);
  return {
    generation: first?.metadata?.generation,
    deadline: dated ? until : now.getTime() + COMMIT_WAIT_MS,
    dated,
  };
}

/** isMine: the snapshot is still the generation the caller joined, not being deleted. */
const isMine = (s: SandboxSnapshot, w: PauseWait) =>
  s.metadata?.generation === w.generation && !s.metadata?.deletionTimestamp;

/**
 * isUnanswered: the caller's generation, its commit not answered yet (a phase left from the
 * generation before counts as none, between a new pause's spec write and its Committing write).
 */
export function isUnanswered(s: SandboxSnapshot | undefined, w: PauseWait): boolean {
  return !!s && isMine(s, w) && !isCommitted(s) && !isFailed(s) && UNANSWERED.has(phaseOf(s));
}

/** PauseWaitStep is what the caller does next with the snapshot it read. */
export type PauseWaitStep =
  /** undone: gone or being deleted; the recorded pod tells a kill (not found) from an undo. */
  | { kind: "undone"; why: string }
  /** abandoned: replaced by a newer pause, or already back to Resumed; the sandbox runs on. */
  | { kind: "abandoned"; why: string }
  /** failed: the agent's commit failed; the caller says why and undoes its pause. */
  | { kind: "failed"; why: string; snapshot: SandboxSnapshot }
  /** complete: committed (or Paused by another step): the caller finishes the pause. */
  | { kind: "complete"; snapshot: SandboxSnapshot }
  /** done: completed by another step and already being resumed: the pause happened. */
  | { kind: "done"; snapshot: SandboxSnapshot }
  /** wait: still unanswered before the deadline (or woken early by another host's clock). */
  | { kind: "wait" }
  /** abandon: still unanswered past the deadline: the caller undoes its own pause. */
  | { kind: "abandon"; why: string; snapshot: SandboxSnapshot };

const UNDONE = "its pause was undone (failed, late or restarted)";

/** pauseWaitStep decides the caller's next step on snapshot `s` (undefined: not found) at `now`. */
export function pauseWaitStep(s: SandboxSnapshot | undefined, w: PauseWait, now: Date): PauseWaitStep {
  if (!s || s.metadata?.deletionTimestamp) return { kind: "undone", why: UNDONE };
  if (!isMine(s, w)) return { kind: "abandoned", why: "a newer pause replaced this one" };
  const phase = phaseOf(s);
  if (phase === SNAPSHOT_PHASE.RESUMED) return { kind: "abandoned", why: UNDONE };
  if (isFailed(s)) return { kind: "failed", why: s.status?.message ?? "no reason given", snapshot: s };
  if (isCommitted(s) || phase === SNAPSHOT_PHASE.PAUSED) return { kind: "complete", snapshot: s };
  if (phase === SNAPSHOT_PHASE.RESUMING) return { kind: "done", snapshot: s };
  if (!isUnanswered(s, w)) return { kind: "wait" };
  const overdue = w.dated ? commitOverdue(s, now) : w.deadline <= now.getTime();
  return overdue
    ? { kind: "abandon", why: "its commit did not finish by the pause's deadline", snapshot: s }
    : { kind: "wait" };
}
