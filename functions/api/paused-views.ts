import type { Tenant } from "../../lib/claims/api-keys.ts";
import { isShownPaused, pausedView } from "../../lib/claims/paused-view.ts";
import { matchesMetadata, type SandboxView } from "../../lib/claims/sandbox-view.ts";
import type { HostDeps } from "../host-deps.ts";
import { findPaused, listPaused } from "../snapshots/find-paused.ts";

/** pausedSandbox is the view of the tenant's paused sandbox id, or undefined when it has none. */
export async function pausedSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
): Promise<SandboxView | undefined> {
  const snapshot = await findPaused(deps, tenant, id);
  return snapshot && isShownPaused(snapshot) ? pausedView(snapshot, deps.now()) : undefined;
}

/**
 * listPausedViews lists the tenant's paused sandboxes (an admin: everyone's) from their snapshots
 * (one list, every namespace), filtered by pool (`namespace/name`) and metadata, at most `limit`,
 * oldest pause first: the native list's `phase=paused` (GET /v1/sandboxes) and the console's.
 */
export async function listPausedViews(
  deps: HostDeps,
  tenant: Tenant,
  q: { limit: number; pool?: string; metadata?: Record<string, string> },
): Promise<SandboxView[]> {
  const views = (await listPaused(deps, tenant))
    .filter(isShownPaused)
    .map((s) => pausedView(s, deps.now()))
    .filter((v) => !q.pool || `${v.namespace}/${v.pool}` === q.pool)
    .filter((v) => !q.metadata || matchesMetadata(v, q.metadata));
  views.sort(
    (a, b) => (a.pausedAt ?? "").localeCompare(b.pausedAt ?? "") || a.sandboxId.localeCompare(b.sandboxId),
  );
  return views.slice(0, q.limit);
}
