import type { CoreV1Event } from "@kubernetes/client-node";
import type { SandboxEnv } from "../../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/api/sandbox-template.ts";
import type { HistoryPage, HistoryQuery } from "../../lib/history/store.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { historyScope } from "../../lib/sandboxes/history-scope.ts";
import type { SandboxView } from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "../api/deps.ts";
import { listSandboxes } from "../api/list-sandboxes.ts";
import { listTargets } from "../api/list-targets.ts";

/** ConsoleData is what one console page shows a tenant: only what that tenant may see. */
export interface ConsoleData {
  tenant: Tenant;
  envs: SandboxEnv[];
  pools: SandboxPool[];
  templates: SandboxTemplate[];
  sandboxes: SandboxView[];
  /** warnings are the Warning events of the sandboxes' pods, by "namespace/pod". */
  warnings: Map<string, CoreV1Event[]>;
  history: HistoryPage;
}

/** CONSOLE_SANDBOXES is how many sandboxes one console page lists (newest claims first). */
export const CONSOLE_SANDBOXES = 200;

/**
 * loadConsole reads what the console shows, as the tenant may see it: the Envs and pools it may
 * claim from and the templates it can see (listTargets; an admin: all), its own sandboxes (an admin: everyone's)
 * with their pods' Warning events, and its history page (filtered by `history`). Reads come from
 * the apiserver's watch cache; one Warning-event list per namespace that holds a shown sandbox.
 */
export async function loadConsole(
  deps: ApiDeps,
  tenant: Tenant,
  history: HistoryQuery,
): Promise<ConsoleData> {
  const [targets, sandboxes, page] = await Promise.all([
    listTargets(deps, tenant),
    listSandboxes(deps, tenant, { limit: CONSOLE_SANDBOXES }),
    deps.history.query({ ...history, ...historyScope(tenant) }),
  ]);
  const shown = new Set(sandboxes.sandboxes.map((s) => `${s.namespace}/${s.pod}`));
  const namespaces = [...new Set(sandboxes.sandboxes.map((s) => s.namespace))];
  const events = await Promise.all(namespaces.map((ns) => deps.kube.listEvents(ns, "type=Warning")));
  const warnings = new Map<string, CoreV1Event[]>();
  for (const e of events.flatMap((l) => l.items)) {
    const pod = `${e.involvedObject?.namespace ?? ""}/${e.involvedObject?.name ?? ""}`;
    if (e.involvedObject?.kind === "Pod" && shown.has(pod))
      warnings.set(pod, [...(warnings.get(pod) ?? []), e]);
  }
  return {
    tenant,
    ...targets,
    sandboxes: sandboxes.sandboxes.sort((a, b) => ((a.claimedAt ?? "") < (b.claimedAt ?? "") ? 1 : -1)),
    warnings,
    history: page,
  };
}
