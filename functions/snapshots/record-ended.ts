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
 * first one), then marks it written (markEnded). Errors are thrown: the record is owed still, and
 * the sweep writes it.
 */
export async function recordEnded(
  deps: Pick<HostDeps, "kube" | "history">,
  s: SandboxSnapshot,
  at: Date,
): Promise<"inserted" | "exists"> {
  const stored = await deps.history.put(pausedRecord(s, at));
  await markEnded(deps, s);
  return stored;
}

/**
 * markEnded sets status.recorded.ended on the deleted snapshot `s`: its end's record is in the
 * history, or is another's to write (a kill that released the pod the pause still held: that
 * pod's stop writes it). Merge-patched without a precondition: the flag only goes to true, once its
 * fact holds, so it undoes no other write. A snapshot already gone is fine; an answer without the
 * flag (a CRD older than the hosts drops the field) is an error naming the fix, since the agent
 * would keep the snapshot for ever.
 */
export async function markEnded(deps: Pick<HostDeps, "kube">, s: SandboxSnapshot): Promise<void> {
  const namespace = s.metadata?.namespace ?? "";
  const name = s.metadata?.name ?? "";
  try {
    const patched = await deps.kube.patchSnapshotStatus(namespace, name, { recorded: { ended: true } });
    if (patched.status?.recorded?.ended !== true)
      throw new Error(
        `sandboxsnapshot ${namespace}/${name} dropped status.recorded.ended: its CRD is older than the hosts (apply crds/)`,
      );
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}
