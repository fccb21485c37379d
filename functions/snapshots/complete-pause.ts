import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL, STOP_REASON } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isConflict, orMissing } from "../../lib/kube/errors.ts";
import { pauseMarkPatch } from "../../lib/snapshots/pause-mark.ts";
import { pauseCompletion, pauseReleases } from "../../lib/snapshots/snapshot-state.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import type { HostDeps } from "../host-deps.ts";
import { releaseSandbox } from "../release-sandbox.ts";
import { recordEvents } from "./record-events.ts";
import { snapshotEvent } from "./snapshot-events.ts";

/** PauseResult is where completePause left a pause: paused, still under way, or ended by a kill. */
export type PauseResult =
  | { result: "paused"; snapshot: SandboxSnapshot }
  | { result: "pending"; snapshot: SandboxSnapshot }
  | { result: "ended"; why: string };

/**
 * completePause takes a committed pause to its end (pauseCompletion): the pod is marked with the
 * pause (no other release ends it from then on: heldByPause), the snapshot is marked Paused, then
 * the pod is released to its pool (stop reason Paused, no terminal record) and the pause's history
 * event written (recordEvents); if the pod no longer runs the sandbox as recorded the pause is
 * undone (abandonPause: a kill or an expiry won the race, a container restarted, or the commit
 * came after the pause's deadline). Run by the pausing call, by the audit-triggered run on the
 * agent's status write and by the tick, in any order and any number of times: each write is
 * preconditioned, and a step that finds its work done does nothing.
 */
export async function completePause(deps: HostDeps, snapshot: SandboxSnapshot): Promise<PauseResult> {
  let s = snapshot;
  const namespace = s.metadata?.namespace ?? "";
  const name = s.metadata?.name ?? "";
  // The pod as the mark's write answered it: decided on again without another read.
  let marked: V1Pod | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod: V1Pod | undefined =
      marked ?? (await orMissing(deps.kube.getPod(namespace, s.spec.source.pod)));
    marked = undefined;
    const next = pauseCompletion(s, pod);
    if (next.kind === "none")
      return s.status?.phase === SNAPSHOT_PHASE.PAUSED
        ? { result: "paused", snapshot: s }
        : { result: "pending", snapshot: s };
    try {
      if (next.kind === "delete") {
        await orMissing(
          deps.kube.deleteSnapshot(namespace, name, { resourceVersion: s.metadata?.resourceVersion ?? "" }),
        );
        deps.log.info({ sandboxId: s.spec.sandboxId }, `pause ended: ${next.why}`);
        return { result: "ended", why: next.why };
      }
      if (next.kind === "back-to-resumed") {
        await deps.kube.replaceSnapshotStatus(namespace, { ...s, status: next.status });
        const why = `${next.why}; the sandbox keeps running`;
        deps.log.info({ sandboxId: s.spec.sandboxId }, `pause abandoned: ${why}`);
        return { result: "ended", why };
      }
      if (next.kind === "mark-pod") {
        // From here no other release ends the sandbox (heldByPause); a pod that changed since it
        // was read fails the precondition and the loop decides again on a fresh read.
        if (pod)
          marked = await deps.kube.patchPod(
            namespace,
            pod.metadata?.name ?? "",
            pauseMarkPatch(pod, s.metadata?.generation ?? 0),
          );
        continue;
      }
      const marking = next.kind === "mark-paused";
      if (marking)
        s = await deps.kube.replaceSnapshotStatus(namespace, {
          ...s,
          status: { ...s.status, phase: SNAPSHOT_PHASE.PAUSED, pausedAt: rfc3339(deps.now()) },
        });
      // Released right after the Paused write (nothing awaited in between that need not be); the
      // pause's history event after both (recordEvents: an outbox the sweep empties if need be).
      if (pod) await releaseToPool(deps, s, pod);
      s = await recordEvents(deps, s);
      if (marking) {
        const images = Object.values(s.status?.images ?? {}).join(", ");
        const note = `paused; its files are ${images}; pod ${s.spec.source.pod} back to pool ${s.spec.pool}`;
        await snapshotEvent(deps, s, "Normal", "Paused", note);
      }
      return { result: "paused", snapshot: s };
    } catch (e) {
      if (!isConflict(e)) throw e;
      const fresh = await orMissing(deps.kube.getSnapshot(namespace, name));
      if (!fresh) return { result: "ended", why: "the snapshot was deleted (the sandbox was killed)" };
      s = fresh;
    }
  }
  return { result: "pending", snapshot: s };
}

/**
 * releaseToPool releases the paused sandbox's pod (Running → Stopping, reason Paused): the pool
 * resets it and takes it back. A release that loses a race re-reads the pod and tries again while
 * the pause still has to release it (pauseReleases: never a pod another sandbox took since).
 */
async function releaseToPool(deps: HostDeps, s: SandboxSnapshot, first: V1Pod): Promise<void> {
  let pod: V1Pod | undefined = first;
  for (let attempt = 0; attempt < 4 && pauseReleases(s, pod); attempt++) {
    const current = pod as V1Pod;
    const pool = await deps.kube.getPool(
      current.metadata?.namespace ?? "",
      current.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "",
    );
    // Not deps.onReleased: that makes the router refuse the id for good, and a paused sandbox
    // comes back under it. The route goes with the pod's watch event.
    const released = await releaseSandbox(deps, pool, current, { stopReason: STOP_REASON.PAUSED });
    if (released.ok || released.reason !== "conflict") return;
    pod = await orMissing(deps.kube.getPod(current.metadata?.namespace ?? "", current.metadata?.name ?? ""));
  }
}
