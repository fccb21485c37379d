import pLimit from "p-limit";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { historyScope } from "../../lib/claims/history-scope.ts";
import { withPausedViews } from "../../lib/claims/sandbox-pod.ts";
import type { SandboxView } from "../../lib/claims/sandbox-view.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { type HistoryPage, type HistoryQuery, HistoryUnavailable } from "../../lib/history/store.ts";
import type { PodDiagnosticEvent } from "../../lib/lifecycle/diagnostics.ts";
import { listSandboxes } from "../api/list-sandboxes.ts";
import { listTargets } from "../api/list-targets.ts";
import { listPausedViews } from "../api/paused-views.ts";
import { withSandboxEvents } from "../api/sandbox-events.ts";
import type { HostDeps } from "../host-deps.ts";

/** ConsoleData is what one console page shows a tenant: only what that tenant may see. */
export interface ConsoleData {
  tenant: Tenant;
  envs: SandboxEnv[];
  pools: SandboxPool[];
  templates: SandboxTemplate[];
  /**
   * sandboxes are its sandboxes with a pod, newest claim first, then its paused ones (phase
   * "paused", from their snapshots: GET /v1/sandboxes?phase=paused's list), oldest pause first.
   */
  sandboxes: SandboxView[];
  /**
   * warnings are the Warning events that explain a shown sandbox with a diagnosis (starting,
   * failed), by sandbox id: its pod's since its claim, as GET /v1/sandboxes/{id} shows them.
   */
  warnings: Map<string, PodDiagnosticEvent[]>;
  /** history is the history page; undefined while the history database is unavailable. */
  history: HistoryPage | undefined;
}

/** CONSOLE_SANDBOXES is how many sandboxes one console page lists (newest claims first). */
export const CONSOLE_SANDBOXES = 200;

/** EVENT_READS is how many of one page's event reads are in flight at once. */
const EVENT_READS = 8;

/**
 * loadConsole reads what the console shows, as the tenant may see it: the Envs and pools it may
 * claim from and the templates it can see (listTargets; an admin: all), its own sandboxes (an
 * admin: everyone's), running or paused (listPausedViews; each once: withPausedViews), and its
 * history page (filtered by `history`). Events are read only for the sandboxes whose diagnosis
 * the page shows, one read of their pod's Warning events each, and only those since the
 * sandbox's claim count (withSandboxEvents, the rule GET uses): a reused pod's events from an
 * earlier sandbox never explain the one it serves now.
 */
export async function loadConsole(
  deps: HostDeps,
  tenant: Tenant,
  history: HistoryQuery,
): Promise<ConsoleData> {
  const [targets, listed, paused, page] = await Promise.all([
    listTargets(deps, tenant),
    listSandboxes(deps, tenant, { limit: CONSOLE_SANDBOXES }),
    listPausedViews(deps, tenant, { limit: CONSOLE_SANDBOXES }),
    // The rest of the page is worth showing while the history database is down.
    deps.history.query({ ...history, ...historyScope(tenant) }).catch((e: unknown) => {
      if (e instanceof HistoryUnavailable) return undefined;
      throw e;
    }),
  ]);
  const pods = new Map(listed.pods.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p]));
  const limit = pLimit(EVENT_READS);
  const explained = await Promise.all(
    listed.sandboxes.map((s) => {
      const pod = pods.get(`${s.namespace}/${s.pod}`);
      return s.detail && pod ? limit(() => withSandboxEvents(deps, pod, s)) : { view: s, events: [] };
    }),
  );
  const warnings = new Map<string, PodDiagnosticEvent[]>();
  for (const { view, events } of explained) if (events.length > 0) warnings.set(view.sandboxId, events);
  return {
    tenant,
    ...targets,
    sandboxes: withPausedViews(listed.sandboxes, listed.pods, paused),
    warnings,
    history: page,
  };
}
