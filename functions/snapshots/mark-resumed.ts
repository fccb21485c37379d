// The Resuming → Resumed write of one resume, shared by the resume that claimed the pod and by
// whoever adopts a resume whose host died (the sweep, another resume), followed by the resume's
// history event (recordEvents: an outbox on the snapshot, emptied by the sweep if need be).
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { phaseOf } from "../../lib/snapshots/snapshot-state.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import type { HostDeps } from "../host-deps.ts";
import { recordEvents } from "./record-events.ts";
import { snapshotEvent } from "./snapshot-events.ts";

/**
 * markResumed writes Resuming → Resumed for this resume's attempt, then its history event. A
 * conflict that leaves the snapshot still Resuming for this attempt (the snapshot agent cleared an
 * earlier pause's images meanwhile) is written again on the fresh object; false when the snapshot
 * is gone or no longer this attempt's.
 */
export async function markResumed(
  deps: HostDeps,
  first: SandboxSnapshot,
  attemptId: string,
  pod: string,
): Promise<boolean> {
  const namespace = first.metadata?.namespace ?? "";
  const name = first.metadata?.name ?? "";
  let s: SandboxSnapshot | undefined = first;
  for (let attempt = 0; attempt < 5 && s; attempt++) {
    // A snapshot being deleted (the sandbox was killed) is no resume's any more.
    if (s.metadata?.deletionTimestamp) return false;
    if (phaseOf(s) !== SNAPSHOT_PHASE.RESUMING || s.status?.resume?.attempt !== attemptId) return false;
    try {
      const resumed = await deps.kube.replaceSnapshotStatus(namespace, {
        ...s,
        status: {
          ...s.status,
          phase: SNAPSHOT_PHASE.RESUMED,
          resumedAt: rfc3339(deps.now()),
          resumes: (s.status?.resumes ?? 0) + 1,
          resume: { attempt: attemptId, until: s.status?.resume?.until ?? rfc3339(deps.now()), pod },
        },
      });
      await snapshotEvent(
        deps,
        s,
        "Normal",
        "Resumed",
        `resumed on pod ${pod} (resume ${(s.status?.resumes ?? 0) + 1})`,
      );
      await recordEvents(deps, resumed);
      return true;
    } catch (e) {
      if (!isConflict(e) && !isNotFound(e)) throw e;
      s = await orMissing(deps.kube.getSnapshot(namespace, name));
    }
  }
  return false;
}
