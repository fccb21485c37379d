// The outbox's writer (lib/snapshots/lifecycle-events.ts): a snapshot's pause and resume events
// the history lacks go to the history store, then status.recorded says so. Run right after each
// transition by the step that made it, and by the tick's sweep for any left behind.
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { recordedStatus, unrecordedEvents } from "../../lib/snapshots/lifecycle-events.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * recordEvents writes the snapshot's unrecorded events (each kept once by the store, so a second
 * writer changes nothing) and marks them recorded, preconditioned on the snapshot as given; a
 * conflict (the agent removed stale images meanwhile, say) marks them on a fresh read, a few
 * times, while that read still owes events. It never fails its caller: a history that cannot
 * answer, or a snapshot that keeps changing or is gone, leaves the events to the sweep (and says
 * `history.down`, so a sweep asks no further this tick). Answers the snapshot as this write left
 * it (the given one when nothing landed).
 */
export async function recordEvents(
  deps: Pick<HostDeps, "kube" | "history" | "log" | "now">,
  s: SandboxSnapshot,
  history: { down: boolean } = { down: false },
): Promise<SandboxSnapshot> {
  let current = s;
  const put = new Set<string>();
  try {
    for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
      const events = unrecordedEvents(current, deps.now());
      if (events.length === 0) return s;
      for (const e of events) {
        if (put.has(`${e.kind}/${e.n}`)) continue;
        await deps.history.putEvent(e);
        put.add(`${e.kind}/${e.n}`);
      }
      try {
        return await deps.kube.replaceSnapshotStatus(current.metadata?.namespace ?? "", {
          ...current,
          status: recordedStatus(current, events),
        });
      } catch (e) {
        if (!isConflict(e) || attempt === RECORD_ATTEMPTS - 1) throw e;
        const fresh = await orMissing(
          deps.kube.getSnapshot(current.metadata?.namespace ?? "", current.metadata?.name ?? ""),
        );
        if (!fresh) return s;
        current = fresh;
      }
    }
  } catch (e) {
    if (e instanceof HistoryUnavailable) history.down = true;
    const expected = e instanceof HistoryUnavailable || isConflict(e) || isNotFound(e);
    (expected ? deps.log.debug : deps.log.warn).call(
      deps.log,
      { sandboxId: s.spec.sandboxId, err: String(e) },
      "lifecycle events left to the sweep",
    );
  }
  return s;
}

/** RECORD_ATTEMPTS bounds the status writes of one recordEvents (each after a conflict). */
const RECORD_ATTEMPTS = 3;
