import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/api/sandbox-template.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import {
  pickTemplatePool,
  poolUsableBy,
  usablePoolNames,
  visibleTemplateNames,
} from "../../lib/sandboxes/pool-choice.ts";
import type { ApiDeps } from "./deps.ts";

export type PoolResolution =
  | { ok: true; pool: SandboxPool; template?: SandboxTemplate }
  | { ok: false; what: "pool" | "template"; name: string; choices: string[] };

/**
 * resolvePool finds the pool a claim targets: `pool` ("namespace/name") directly, or the pool
 * created from `template` with the most idle pods. A pool or template the tenant may not see is
 * reported as unknown, with the pools or templates it may use as choices (read only on this
 * error path).
 */
export async function resolvePool(
  deps: ApiDeps,
  tenant: Tenant,
  target: { pool?: string; template?: string },
): Promise<PoolResolution> {
  if (target.pool) {
    const [namespace = "", name = ""] = target.pool.split("/");
    const pool = await orMissing(deps.kube.getPool(namespace, name));
    const template = pool?.spec.templateName
      ? await orMissing(deps.kube.getTemplate(pool.spec.templateName))
      : undefined;
    if (pool && poolUsableBy(template, tenant)) return { ok: true, pool, ...(template ? { template } : {}) };
    const [pools, templates] = await Promise.all([deps.kube.listPools(), deps.kube.listTemplates()]);
    return {
      ok: false,
      what: "pool",
      name: target.pool,
      choices: usablePoolNames(pools.items, templates.items, tenant),
    };
  }
  const name = target.template ?? "";
  const template = await orMissing(deps.kube.getTemplate(name));
  if (template && poolUsableBy(template, tenant)) {
    const pool = pickTemplatePool((await deps.kube.listPools()).items, name);
    if (pool) return { ok: true, pool, template };
  }
  const templates = (await deps.kube.listTemplates()).items;
  return { ok: false, what: "template", name, choices: visibleTemplateNames(templates, tenant) };
}
