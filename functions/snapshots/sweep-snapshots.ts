// The tick's sweep of SandboxSnapshots (lib/snapshots/snapshot-sweep.ts): pauses and resumes whose
// caller is gone are finished or undone, paused sandboxes past their retention end, snapshots of
// sandboxes that ended go, and a snapshot whose node is gone is handed to a live node's agent
// (hand-over-snapshot.ts). One list per tick; a snapshot with something to do is decided again on
// quorum reads before any write, and every write is preconditioned on its version.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { unrecordedEvents } from "../../lib/snapshots/lifecycle-events.ts";
import { awaitsAnyAgent } from "../../lib/snapshots/node-handover.ts";
import { type SnapshotSweep, snapshotSweep } from "../../lib/snapshots/snapshot-sweep.ts";
import { parseTime } from "../../lib/util/time.ts";
import type { HostDeps } from "../host-deps.ts";
import { completePause } from "./complete-pause.ts";
import { handOverSnapshot, nodeReads } from "./hand-over-snapshot.ts";
import { markResumed } from "./mark-resumed.ts";
import { recordEnded } from "./record-ended.ts";
import { recordEvents } from "./record-events.ts";
import { snapshotEvent } from "./snapshot-events.ts";

/** SnapshotSweepReport counts the snapshots listed and the ones written to. */
export interface SnapshotSweepReport {
  snapshots: number;
  writes: number;
}

/**
 * sweepSnapshots decides every snapshot (in `namespace`, or all) on the tick's pods (`known`), and
 * acts on those with work after deciding again on fresh reads; it first writes the history events
 * a snapshot's outbox still holds (recordEvents), and one that waits for its agent
 * (awaitsAnyAgent) has its node read, unless a known pod runs on it: a node gone hands it over.
 * Failures are logged and left to the next tick.
 */
export async function sweepSnapshots(
  deps: HostDeps,
  namespace: string | undefined,
  known: readonly V1Pod[] = [],
): Promise<SnapshotSweepReport> {
  const listed = await deps.kube.listSnapshots(namespace).catch((e: unknown) => {
    // A cluster without the SandboxSnapshot CRD (installed before pause existed): said once.
    if (!isNotFound(e)) throw e;
    if (!deps.noticed.has("snapshot-crd")) {
      deps.noticed.add("snapshot-crd");
      deps.log.warn(
        {},
        "the SandboxSnapshot CRD is not installed: pause and resume are unavailable (apply crds/)",
      );
    }
    return undefined;
  });
  const snapshots = listed?.items ?? [];
  let writes = 0;
  const reads = nodeReads(deps);
  const onNode = new Set(known.map((p) => p.spec?.nodeName));
  // One history that cannot answer is not asked again for every snapshot of this tick.
  const history = { down: false };
  for (const listed of snapshots) {
    // The outbox first: a pause or resume whose history event is not written yet.
    const owed = !history.down && unrecordedEvents(listed, deps.now()).length > 0;
    const s = owed ? await recordEvents(deps, listed, history) : listed;
    if (s !== listed) writes++;
    const ns = s.metadata?.namespace ?? "";
    const id = s.spec.sandboxId;
    const mine = (p: V1Pod) => p.metadata?.namespace === ns && p.metadata?.labels?.[SANDBOX_ID_LABEL] === id;
    const source = known.find((p) => p.metadata?.namespace === ns && p.metadata?.name === s.spec.source.pod);
    try {
      // Whatever else it needs, one that waits for its agent on a node that is gone is handed over.
      if (awaitsAnyAgent(s) && !onNode.has(s.spec.source.node) && (await handOverSnapshot(deps, s, reads)))
        writes++;
      const first = snapshotSweep(s, known.filter(mine), source, deps.now());
      if (first.kind === "none") continue;
      // A deleted one's end record: no fresh read needed (its writes are idempotent), and not
      // while the history cannot answer.
      if (first.kind === "record-ended") {
        if (!history.down && (await applySweep(deps, s, first))) writes++;
        continue;
      }
      const byId = (await deps.kube.listPods(ns, `${SANDBOX_ID_LABEL}=${id}`)).items;
      const fresh = await orMissing(deps.kube.getPod(ns, s.spec.source.pod));
      const decision = snapshotSweep(s, byId, fresh, deps.now());
      if (await applySweep(deps, s, decision)) writes++;
    } catch (e) {
      if (e instanceof HistoryUnavailable) history.down = true;
      if (isConflict(e) || isNotFound(e)) continue;
      deps.log.warn({ sandboxId: id, err: String(e) }, "snapshot sweep: left to the next tick");
    }
  }
  return { snapshots: snapshots.length, writes };
}

/**
 * endedAt is when a paused sandbox ended: its snapshot's deletion (the same on every host for the
 * sweep's rule), else now (the retention's delete, which wrote no deletion time it read back).
 */
const endedAt = (s: SandboxSnapshot, now: Date): Date => parseTime(s.metadata?.deletionTimestamp) ?? now;

/** applySweep makes one sweep decision's write (preconditioned); true when something was written. */
export async function applySweep(deps: HostDeps, s: SandboxSnapshot, d: SnapshotSweep): Promise<boolean> {
  const ns = s.metadata?.namespace ?? "";
  const status = s.status ?? {};
  switch (d.kind) {
    case "none":
      return false;
    case "complete-pause":
      return (await completePause(deps, s)).result !== "pending";
    case "resumed":
      return markResumed(deps, s, status.resume?.attempt ?? "", d.pod);
    case "back-to-paused": {
      const { resume: _dropped, ...rest } = status;
      await deps.kube.replaceSnapshotStatus(ns, { ...s, status: { ...rest, phase: SNAPSHOT_PHASE.PAUSED } });
      return true;
    }
    case "back-to-resumed":
      await deps.kube.replaceSnapshotStatus(ns, { ...s, status: d.status });
      deps.log.info({ sandboxId: s.spec.sandboxId }, `pause abandoned: ${d.why}; the sandbox keeps running`);
      return true;
    case "record-ended":
      await recordEnded(deps, s, endedAt(s, deps.now()));
      return true;
    case "delete":
      // Deleted at the version decided on first: a record only for a sandbox that surely ended.
      await deps.kube.deleteSnapshot(ns, s.metadata?.name ?? "", {
        resourceVersion: s.metadata?.resourceVersion ?? "",
      });
      deps.log.info({ sandboxId: s.spec.sandboxId }, `snapshot deleted: ${d.why}`);
      if (d.record) {
        // Deleted first: a history down here leaves the record to the rule for a deleted Paused one.
        await recordEnded(deps, s, endedAt(s, deps.now()));
        await snapshotEvent(deps, s, "Normal", "Expired", `ended while paused: ${d.why}`);
      }
      return true;
  }
}
