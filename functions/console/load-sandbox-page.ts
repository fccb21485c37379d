import type { Tenant } from "../../lib/claims/api-keys.ts";
import { mayReadHistory } from "../../lib/claims/history-scope.ts";
import { sandboxView } from "../../lib/claims/sandbox-view.ts";
import type { SandboxPage } from "../../lib/console/sandbox-page.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { isSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import { pausedSandbox } from "../api/paused-views.ts";
import type { HostDeps } from "../host-deps.ts";

/** down stands for a read whose database cannot answer now; any other error is a fault. */
const down = (e: unknown): "down" => {
  if (e instanceof HistoryUnavailable) return "down";
  throw e;
};

/**
 * loadSandboxPage reads what the console's sandbox page shows a tenant: the sandbox's history
 * record once it ended and its lifecycle events (each pause and resume), when the tenant may see
 * them (mayReadHistory: its own team and user; an admin: any), else the sandbox while a pod runs
 * it (findSandbox: another tenant's is not found) or while it is paused (pausedSandbox, from its
 * snapshot, owner-scoped alike), and its resource samples over its life (UsageStore.range, oldest
 * first). The record and events are read first: keyed rows, the record there only once the
 * sandbox ended (the usual page), where findSandbox on a watch-cache miss lists every pod
 * uncached. Undefined: no such sandbox for this tenant, so another tenant's reads exactly like
 * one that never existed. The samples are read only once the sandbox is known to be the
 * tenant's. No envd token or URL is read: the page shows none.
 */
export async function loadSandboxPage(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
): Promise<SandboxPage | undefined> {
  if (!isSandboxId(id)) return undefined;
  const [found, events] = await Promise.all([
    deps.history.get(id).catch(down),
    deps.history.events(id).catch(down),
  ]);
  const record = found === "down" ? undefined : found;
  const known = events === "down" ? [] : events;
  if ((record || known.length > 0) && !mayReadHistory(tenant, record, known)) return undefined;
  const pod = record ? undefined : await findSandbox(deps, tenant, id);
  // No pod runs it: a paused sandbox is its snapshot, as GET /v1/sandboxes/{id} shows it.
  const live = pod
    ? sandboxView(pod, deps.now())
    : record
      ? undefined
      : await pausedSandbox(deps, tenant, id);
  // Whose an ended sandbox was cannot be told while the history is down: the page says so, and shows nothing.
  if (!live && found === "down") return { sandboxId: id, record: "down", samples: "down" };
  if (!live && !record) return undefined;
  const samples = deps.usage ? await deps.usage.range(id, {}).catch(down) : "none-kept";
  return { sandboxId: id, ...(live ? { live } : {}), ...(record ? { record } : {}), events, samples };
}
