import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SANDBOX_PHASE, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { sandboxPhaseOf } from "../../lib/lifecycle/phase-label.ts";
import { isLegalTransition } from "../../lib/lifecycle/transitions.ts";
import type { HostDeps } from "../host-deps.ts";
import { releaseSandbox } from "../release-sandbox.ts";
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
    if (!pod) return attempt === 0 ? "not-found" : "already-released";
    // Already stopping (or failed): nothing to release, and no need to read the pool.
    const phase = sandboxPhaseOf(pod);
    if (!phase || !isLegalTransition(phase, SANDBOX_PHASE.STOPPING)) return "already-released";
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
