// The history's lifecycle events of a pause and a resume (lib/history/lifecycle-event.ts), read
// from the snapshot at the step that completes each. Every field comes from the object as the
// transition wrote it (its time included), so a step that runs again after a crash builds the same
// event and the store keeps one.
import type { SandboxSnapshot } from "../crd/sandbox-snapshot.ts";
import type { LifecycleEvent } from "../history/lifecycle-event.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

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

/**
 * pauseEvent is the n-th pause (n = resumes before it + 1) of a snapshot marked Paused: the pod it
 * leaves, the images it committed and their size, at status.pausedAt (`now` only for an object
 * that lacks it).
 */
export function pauseEvent(s: SandboxSnapshot, now: Date): LifecycleEvent {
  return {
    ...common(s),
    kind: "paused",
    n: (s.status?.resumes ?? 0) + 1,
    at: rfc3339(parseTime(s.status?.pausedAt) ?? now),
    podName: s.spec.source.pod,
    ...(s.status?.bytes !== undefined ? { bytes: s.status.bytes } : {}),
  };
}

/** resumeEvent is the n-th resume (n = resumes before it + 1) of a Resuming snapshot, on `pod`. */
export function resumeEvent(s: SandboxSnapshot, pod: string, now: Date): LifecycleEvent {
  return {
    ...common(s),
    kind: "resumed",
    n: (s.status?.resumes ?? 0) + 1,
    at: rfc3339(now),
    podName: pod,
  };
}
