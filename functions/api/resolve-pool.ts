import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/api/sandbox-template.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { templateVisibleTo } from "../../lib/sandboxes/visibility.ts";
import type { ApiDeps } from "./deps.ts";

export type PoolResolution =
  | { ok: true; pool: SandboxPool; template?: SandboxTemplate }
  | { ok: false; what: "pool" | "template"; name: string; choices: string[] };

/** usable: the tenant may claim from a pool whose template it can see (or that has none). */
function usable(pool: SandboxPool, templates: ReadonlyMap<string, SandboxTemplate>, tenant: Tenant): boolean {
  const name = pool.spec.templateName;
  if (!name) return true;
  const template = templates.get(name);
  return template === undefined || templateVisibleTo(template.spec.visibility, tenant);
}

/**
 * resolvePool finds the pool a claim targets: `pool` ("namespace/name") directly, or the first
 * pool created from `template`. A pool or template the tenant may not see is reported as unknown,
 * with the pools or templates it may use as choices (read only on this error path).
 */
export async function resolvePool(
  deps: ApiDeps,
  tenant: Tenant,
  target: { pool?: string; template?: string },
): Promise<PoolResolution> {
  if (target.pool) {
    const [namespace = "", name = ""] = target.pool.split("/");
    const pool = await deps.kube
      .getPool(namespace, name)
      .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
    const template = pool?.spec.templateName ? await getTemplate(deps, pool.spec.templateName) : undefined;
    if (pool && (!template || templateVisibleTo(template.spec.visibility, tenant)))
      return { ok: true, pool, ...(template ? { template } : {}) };
    return { ok: false, what: "pool", name: target.pool, choices: await poolChoices(deps, tenant) };
  }
  const name = target.template ?? "";
  const template = await getTemplate(deps, name);
  if (template && templateVisibleTo(template.spec.visibility, tenant)) {
    const pools = (await deps.kube.listPools()).items.filter(
      (p) => p.spec.templateName === name && !p.metadata?.deletionTimestamp,
    );
    const pool = pools.sort((a, b) => (b.status?.idleReplicas ?? 0) - (a.status?.idleReplicas ?? 0))[0];
    if (pool) return { ok: true, pool, template };
  }
  const templates = (await deps.kube.listTemplates()).items.filter((t) =>
    templateVisibleTo(t.spec.visibility, tenant),
  );
  return { ok: false, what: "template", name, choices: templates.map((t) => t.metadata?.name ?? "").sort() };
}

async function getTemplate(deps: ApiDeps, name: string): Promise<SandboxTemplate | undefined> {
  return deps.kube.getTemplate(name).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
}

async function poolChoices(deps: ApiDeps, tenant: Tenant): Promise<string[]> {
  const [pools, templates] = await Promise.all([deps.kube.listPools(), deps.kube.listTemplates()]);
  const byName = new Map(templates.items.map((t) => [t.metadata?.name ?? "", t]));
  return pools.items
    .filter((p) => !p.metadata?.deletionTimestamp && usable(p, byName, tenant))
    .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)
    .sort();
}
