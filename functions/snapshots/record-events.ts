// The outbox's writer (lib/snapshots/lifecycle-events.ts): a snapshot's pause and resume events
// the history lacks go to the history store, then status.recorded says so. Run right after each
// transition by the step that made it, and by the tick's sweep for any left behind.
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { recordedStatus, unrecordedEvents } from "../../lib/snapshots/lifecycle-events.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * recordEvents writes the snapshot's unrecorded events (each kept once by the store, so a second
 * writer changes nothing) and marks them recorded, preconditioned on the snapshot as given. It
 * never fails its caller: a history that cannot answer, or a snapshot changed meanwhile, leaves
 * the events to the sweep (and says `history.down`, so a sweep asks no further this tick).
 * Answers the snapshot as it now is (the given one when nothing landed).
 */
export async function recordEvents(
  deps: Pick<HostDeps, "kube" | "history" | "log" | "now">,
  s: SandboxSnapshot,
  history: { down: boolean } = { down: false },
): Promise<SandboxSnapshot> {
  const events = unrecordedEvents(s, deps.now());
  if (events.length === 0) return s;
  try {
    for (const e of events) await deps.history.putEvent(e);
    return await deps.kube.replaceSnapshotStatus(s.metadata?.namespace ?? "", {
      ...s,
      status: recordedStatus(s, events),
    });
  } catch (e) {
    if (e instanceof HistoryUnavailable) history.down = true;
    const expected = e instanceof HistoryUnavailable || isConflict(e) || isNotFound(e);
    (expected ? deps.log.debug : deps.log.warn).call(
      deps.log,
      { sandboxId: s.spec.sandboxId, err: String(e) },
      "lifecycle events left to the sweep",
    );
    return s;
  }
}
