import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SANDBOX_PHASE, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { sandboxPhaseOf } from "../../lib/lifecycle/phase-label.ts";
import { isLegalTransition } from "../../lib/lifecycle/transitions.ts";
import { pausedRecord } from "../../lib/snapshots/paused-record.ts";
import type { HostDeps } from "../host-deps.ts";
import { releaseSandbox } from "../release-sandbox.ts";
import { findPaused } from "../snapshots/find-paused.ts";
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
    if (!pod && attempt === 0) return (await killPaused(deps, tenant, id)) ? "released" : "not-found";
    if (!pod) return "already-released";
    // Already stopping (or failed): nothing to release, and no need to read the pool.
    const phase = sandboxPhaseOf(pod);
    // A paused sandbox's pod may still be on its way back to the pool: the snapshot is the sandbox.
    if (!phase || !isLegalTransition(phase, SANDBOX_PHASE.STOPPING))
      return (await killPaused(deps, tenant, id)) ? "released" : "already-released";
    const pool = await deps.kube.getPool(
      pod.metadata?.namespace ?? "",
      pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "",
    );
    const result = await releaseSandbox(deps, pool, pod, { stopReason: "Released" });
    if (result.ok) {
      deps.onReleased(id);
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
 * terminal record is written and its SandboxSnapshot deleted (the snapshot agent then deletes the
 * images; a resume under way finds the snapshot gone and gives its pod back). False: none.
 */
async function killPaused(deps: HostDeps, tenant: Tenant, id: string): Promise<boolean> {
  const s = await findPaused(deps, tenant, id);
  if (!s || s.metadata?.deletionTimestamp) return false;
  await deps.history.put(pausedRecord(s, deps.now()));
  await deps.kube.deleteSnapshot(s.metadata?.namespace ?? "", s.metadata?.name ?? "").catch((e: unknown) => {
    if (!isNotFound(e)) throw e;
  });
  deps.metrics?.deletes.inc({ namespace: s.metadata?.namespace ?? "", pool: s.spec.pool });
  return true;
}
