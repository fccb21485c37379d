import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SANDBOX_PHASE, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { sandboxPhaseOf } from "../../lib/lifecycle/phase-label.ts";
import { isLegalTransition } from "../../lib/lifecycle/transitions.ts";
import { isPauseOf } from "../../lib/snapshots/release-decision.ts";
import type { HostDeps } from "../host-deps.ts";
import { releaseSandbox } from "../release-sandbox.ts";
import { findPaused } from "../snapshots/find-paused.ts";
import { markEnded, recordEnded } from "../snapshots/record-ended.ts";
import { findSandbox } from "./find-sandbox.ts";

export type DeleteOutcome = "released" | "already-released" | "not-found";

/**
 * deleteSandbox releases a sandbox (Running or Starting → Stopping, stop reason Released). It is
 * idempotent: a sandbox already stopping reports already-released. The first read may be the
 * watch cache's (findSandbox): a pod read a moment old fails the release's resourceVersion
 * precondition, and "already stopping" read from it is still true, as phases only move forward.
 * A release that loses a race re-reads the pod from etcd and decides again (a few times), since
 * the caller asked for exactly this.
 */
export async function deleteSandbox(deps: HostDeps, tenant: Tenant, id: string): Promise<DeleteOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod = await findSandbox(deps, tenant, id, attempt > 0);
    if (!pod) {
      const killed = await killPaused(deps, tenant, id);
      if (killed === "changed") continue;
      return killed === "killed" ? "released" : attempt === 0 ? "not-found" : "already-released";
    }
    // Already stopping (or failed): nothing to release, and no need to read the pool.
    const phase = sandboxPhaseOf(pod);
    // A paused sandbox's pod may still be on its way back to the pool: the snapshot is the sandbox.
    if (!phase || !isLegalTransition(phase, SANDBOX_PHASE.STOPPING)) {
      const killed = await killPaused(deps, tenant, id);
      if (killed === "changed") continue;
      return killed === "killed" ? "released" : "already-released";
    }
    const pool = await deps.kube.getPool(
      pod.metadata?.namespace ?? "",
      pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "",
    );
    const result = await releaseSandbox(deps, pool, pod, { stopReason: "Released" });
    if (result.ok) {
      deps.onReleased(id);
      await endPauseOf(deps, pod, id);
      deps.metrics?.deletes.inc({
        namespace: pod.metadata?.namespace ?? "",
        pool: pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "",
      });
      return "released";
    }
    if (result.reason !== "conflict") return "already-released";
  }
  return "already-released";
}

/**
 * killPaused ends the tenant's sandbox id when it holds no pod (paused, or a resume under way): its
 * SandboxSnapshot is deleted at the version read (the snapshot agent then deletes the images; a
 * resume under way finds it being deleted and gives its pod back), then its terminal record is
 * written. "changed": the snapshot moved meanwhile (a resume landed): decide again; "none": no
 * paused sandbox of that id.
 */
async function killPaused(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
): Promise<"killed" | "changed" | "none"> {
  const s = await findPaused(deps, tenant, id);
  if (!s || s.metadata?.deletionTimestamp) return "none";
  try {
    await deps.kube.deleteSnapshot(s.metadata?.namespace ?? "", s.metadata?.name ?? "", {
      resourceVersion: s.metadata?.resourceVersion ?? "",
    });
  } catch (e) {
    if (isConflict(e)) return "changed";
    if (isNotFound(e)) return "none";
    throw e;
  }
  // The snapshot keeps its facts until the record is written: a history down now leaves it to the
  // tick's sweep, and the kill, which landed, is answered as such.
  await recordEnded(deps, s, deps.now()).catch((e: unknown) =>
    deps.log.warn({ sandboxId: id, err: String(e) }, "kill: the terminal record is left to the sweep"),
  );
  deps.metrics?.deletes.inc({ namespace: s.metadata?.namespace ?? "", pool: s.spec.pool });
  return "killed";
}

/**
 * endPauseOf deletes, after a kill released the pod, a pause of that very pod that had not
 * released it yet (isPauseOf: marked Paused, or still committing): the kill wins, nothing stays
 * resumable. The released pod's stop writes the sandbox's terminal record, so the snapshot is
 * marked as owing none (markEnded; a host dead in between leaves the sweep to write one, and the
 * history keeps whichever comes first). Best effort: the tick's sweep deletes a pause whose pod no
 * longer runs it.
 */
async function endPauseOf(deps: HostDeps, pod: V1Pod, id: string): Promise<void> {
  const namespace = pod.metadata?.namespace ?? "";
  const s = await orMissing(deps.kube.getSnapshot(namespace, id)).catch(() => undefined);
  if (!s || !isPauseOf(s, pod)) return;
  try {
    await deps.kube.deleteSnapshot(namespace, id, { resourceVersion: s.metadata?.resourceVersion ?? "" });
    await markEnded(deps, s);
  } catch (e) {
    deps.log.info({ sandboxId: id, err: String(e) }, "kill: its pause is left to the sweep");
  }
}
