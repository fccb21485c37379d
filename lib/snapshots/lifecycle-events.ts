// The history's lifecycle events of a pause and a resume (lib/history/lifecycle-event.ts), kept as
// an outbox on the snapshot: a transition is written first (Paused, Resumed), its event after, and
// status.recorded says which the history holds, so an event is never written for a transition
// that did not land, and one that was not written yet (the history down, a host died between the
// two writes) is written by the tick's sweep. Every field comes from the snapshot as the
// transition wrote it, its time included, so whoever writes the event writes the same one. A new
// pause replaces the facts of the pause and resume before it; any of their events still owed then
// move to status.pendingEvents (carriedEvents), so a history down through several pauses loses none.
// A sandbox that ended paused owes its terminal record too (status.recorded.ended), and the
// snapshot agent lets a deleted snapshot go only once it owes nothing (owesHistory): a kill while
// the history is down loses neither the record nor the events.
import {
  MAX_PENDING_EVENTS,
  type PendingEvent,
  type SandboxSnapshot,
  type SandboxSnapshotStatus,
  SNAPSHOT_PHASE,
} from "../crd/sandbox-snapshot.ts";
import type { LifecycleEvent } from "../history/lifecycle-event.ts";
import { parseTime, rfc3339 } from "../util/time.ts";
import { phaseOf } from "./snapshot-state.ts";

/** common is the event's fields common to both kinds. */
function common(s: SandboxSnapshot) {
  const c = s.spec.claim;
  return {
    sandboxId: s.spec.sandboxId,
    namespace: s.metadata?.namespace ?? "",
    poolName: s.spec.pool,
    ...(c.team ? { team: c.team } : {}),
    ...(c.user ? { user: c.user } : {}),
    images: { ...s.status?.images },
  };
}

/** AFTER_PAUSE are the phases that follow a completed pause: the status holds its facts. */
const AFTER_PAUSE: ReadonlySet<string> = new Set([
  SNAPSHOT_PHASE.PAUSED,
  SNAPSHOT_PHASE.RESUMING,
  SNAPSHOT_PHASE.RESUMED,
]);

/**
 * pauseNumber is the n of the snapshot's latest completed pause whose facts its status still holds
 * (0: none): a Paused or Resuming one's is its resumes + 1; a Resumed one's is its resumes (the
 * pause its last resume came from). Once a new pause is under way the earlier one's facts are
 * gone, so it is not counted.
 */
function pauseNumber(s: SandboxSnapshot): number {
  const resumes = s.status?.resumes ?? 0;
  const phase = phaseOf(s);
  if (phase === SNAPSHOT_PHASE.PAUSED || phase === SNAPSHOT_PHASE.RESUMING) return resumes + 1;
  return phase === SNAPSHOT_PHASE.RESUMED ? resumes : 0;
}

/**
 * unrecordedEvents are the events the history still lacks: those carried in status.pendingEvents,
 * then those of the snapshot's latest pause and resume that status.recorded does not list: the
 * pause (at status.pausedAt, the pod it left, its images and size) and the resume (at
 * status.resumedAt, the pod it resumed on). A deleted snapshot owes them as any other: each is a
 * transition that landed before its sandbox ended.
 */
export function unrecordedEvents(s: SandboxSnapshot, now: Date): LifecycleEvent[] {
  const carried = (s.status?.pendingEvents ?? []).map((p) => fromPending(s, p));
  const recorded = s.status?.recorded ?? {};
  const events: LifecycleEvent[] = carried;
  const paused = pauseNumber(s);
  if (paused > (recorded.paused ?? 0) && AFTER_PAUSE.has(phaseOf(s)))
    events.push({
      ...common(s),
      kind: "paused",
      n: paused,
      at: rfc3339(parseTime(s.status?.pausedAt) ?? now),
      podName: s.spec.source.pod,
      ...(s.status?.bytes !== undefined ? { bytes: s.status.bytes } : {}),
    });
  const resumed = s.status?.resumes ?? 0;
  if (resumed > (recorded.resumed ?? 0) && phaseOf(s) === SNAPSHOT_PHASE.RESUMED)
    events.push({
      ...common(s),
      kind: "resumed",
      n: resumed,
      at: rfc3339(parseTime(s.status?.resumedAt) ?? now),
      podName: s.status?.resume?.pod ?? "",
    });
  return events;
}

/**
 * endUnrecorded: the snapshot of a sandbox that ended paused (deleted while Paused: a kill, its
 * retention) whose terminal record the history is not known to hold (status.recorded.ended).
 */
export function endUnrecorded(s: SandboxSnapshot): boolean {
  return (
    Boolean(s.metadata?.deletionTimestamp) &&
    phaseOf(s) === SNAPSHOT_PHASE.PAUSED &&
    s.status?.recorded?.ended !== true
  );
}

/**
 * owesHistory: the history still lacks an event or the terminal record this snapshot holds the
 * facts of. The snapshot agent keeps a deleted one until it owes nothing, since once the object
 * is gone those facts are too.
 */
export function owesHistory(s: SandboxSnapshot): boolean {
  return endUnrecorded(s) || unrecordedEvents(s, new Date(0)).length > 0;
}

/**
 * recordedStatus is the status once `events` are in the history: status.recorded raised to them,
 * and the carried ones among them gone from status.pendingEvents.
 */
export function recordedStatus(s: SandboxSnapshot, events: readonly LifecycleEvent[]): SandboxSnapshotStatus {
  const recorded = { ...s.status?.recorded };
  for (const e of events) recorded[e.kind] = Math.max(recorded[e.kind] ?? 0, e.n);
  const written = new Set(events.map((e) => `${e.kind}/${e.n}`));
  const { pendingEvents, ...rest } = s.status ?? {};
  const left = (pendingEvents ?? []).filter((p) => !written.has(`${p.kind}/${p.n}`));
  return { ...rest, recorded, ...(left.length > 0 ? { pendingEvents: left } : {}) };
}

/**
 * carriedEvents is status.pendingEvents for a new pause of `s` (written with its Committing
 * status): what `s` carries, plus the events of its latest pause and resume still owed, whose
 * facts the new pause replaces. At most MAX_PENDING_EVENTS, the latest kept.
 */
export function carriedEvents(s: SandboxSnapshot, now: Date): PendingEvent[] {
  const owed = unrecordedEvents(s, now).map(
    (e): PendingEvent => ({
      kind: e.kind,
      n: e.n,
      at: e.at,
      podName: e.podName,
      ...(Object.keys(e.images).length > 0 ? { images: e.images } : {}),
      ...(e.bytes !== undefined ? { bytes: e.bytes } : {}),
    }),
  );
  return owed.slice(-MAX_PENDING_EVENTS);
}

/** fromPending is a carried event as the history keeps it, with the sandbox's fields of `s`. */
function fromPending(s: SandboxSnapshot, p: PendingEvent): LifecycleEvent {
  return {
    ...common(s),
    kind: p.kind,
    n: p.n,
    at: p.at,
    podName: p.podName,
    images: { ...p.images },
    ...(p.bytes !== undefined ? { bytes: p.bytes } : {}),
  };
}
