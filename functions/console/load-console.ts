import type { CoreV1Event } from "@kubernetes/client-node";
import type { SandboxEnv } from "../../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/api/sandbox-template.ts";
import type { HistoryPage, HistoryQuery } from "../../lib/history/store.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { usableEnvNames, usablePoolNames, visibleTemplateNames } from "../../lib/sandboxes/pool-choice.ts";
import type { SandboxView } from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "../api/deps.ts";
import { listSandboxes } from "../api/list-sandboxes.ts";

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

const key = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

/**
 * loadConsole reads what the console shows, as the tenant may see it: the Envs and pools it may
 * claim from (an admin: all), the templates it can see, its own sandboxes (an admin: everyone's)
 * with their pods' Warning events, and its history page (filtered by `history`). Reads come from
 * the apiserver's watch cache; one Warning-event list per namespace that holds a shown sandbox.
 */
export async function loadConsole(
  deps: ApiDeps,
  tenant: Tenant,
  history: HistoryQuery,
): Promise<ConsoleData> {
  const cached = { cached: true };
  const scope = tenant.admin ? {} : { team: tenant.team, user: tenant.user };
  const [pools, envs, templates, sandboxes, page] = await Promise.all([
    deps.kube.listPools(undefined, cached),
    deps.kube.listEnvs(undefined, cached),
    deps.kube.listTemplates(cached),
    listSandboxes(deps, tenant, { limit: CONSOLE_SANDBOXES }),
    deps.history.query({ ...history, ...scope }),
  ]);
  const usablePools = new Set(usablePoolNames(pools.items, templates.items, tenant));
  const usableEnvs = new Set(usableEnvNames(envs.items, templates.items, tenant, deps.clusterId ?? ""));
  const visibleTemplates = new Set(visibleTemplateNames(templates.items, tenant));
  const shown = new Set(sandboxes.sandboxes.map((s) => `${s.namespace}/${s.pod}`));
  const namespaces = [...new Set(sandboxes.sandboxes.map((s) => s.namespace))];
  const events = await Promise.all(namespaces.map((ns) => deps.kube.listEvents(ns, "type=Warning")));
  const warnings = new Map<string, CoreV1Event[]>();
  for (const e of events.flatMap((l) => l.items)) {
    const pod = `${e.involvedObject?.namespace ?? ""}/${e.involvedObject?.name ?? ""}`;
    if (e.involvedObject?.kind === "Pod" && shown.has(pod))
      warnings.set(pod, [...(warnings.get(pod) ?? []), e]);
  }
  const byKey = (a: SandboxPool | SandboxEnv, b: SandboxPool | SandboxEnv) => (key(a) < key(b) ? -1 : 1);
  return {
    tenant,
    envs: envs.items.filter((e) => tenant.admin || usableEnvs.has(key(e))).sort(byKey),
    pools: pools.items.filter((p) => tenant.admin || usablePools.has(key(p))).sort(byKey),
    templates: templates.items.filter((t) => tenant.admin || visibleTemplates.has(t.metadata?.name ?? "")),
    sandboxes: sandboxes.sandboxes.sort((a, b) => ((a.claimedAt ?? "") < (b.claimedAt ?? "") ? 1 : -1)),
    warnings,
    history: page,
  };
}
