// The terminal record of a sandbox that ended paused (its snapshot deleted: a kill, its retention).
// The snapshot holds the record's facts and its agent's finalizer keeps it until
// status.recorded.ended says the history has the record (lib/snapshots/lifecycle-events.ts), so a
// history that is down when the sandbox ends loses nothing: the tick's sweep writes it later.
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { pausedRecord } from "../../lib/snapshots/paused-record.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * recordEnded writes the terminal record of the paused sandbox `s` ended at `at` (the store keeps the
 * first one), then sets status.recorded.ended. The flag is merge-patched without a precondition:
 * it only goes to true, once the record is stored, so it undoes no other write. A snapshot already
 * gone answers "inserted" or "exists" as the store did. Errors of the history are thrown: the
 * record is owed still, and the sweep writes it.
 */
export async function recordEnded(
  deps: Pick<HostDeps, "kube" | "history">,
  s: SandboxSnapshot,
  at: Date,
): Promise<"inserted" | "exists"> {
  const stored = await deps.history.put(pausedRecord(s, at));
  await deps.kube
    .patchSnapshotStatus(s.metadata?.namespace ?? "", s.metadata?.name ?? "", { recorded: { ended: true } })
    .catch((e: unknown) => {
      if (!isNotFound(e)) throw e;
    });
  return stored;
}
