import type { Tenant } from "../../lib/claims/api-keys.ts";
import { usableEnvNames, usablePoolNames, visibleTemplateNames } from "../../lib/claims/pool-choice.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import type { HostDeps } from "../host-deps.ts";

/** Targets are what a tenant may claim from (pools, Envs) and the templates it can see. */
export interface Targets {
  pools: SandboxPool[];
  envs: SandboxEnv[];
  templates: SandboxTemplate[];
}

const key = (o: SandboxPool | SandboxEnv) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

/**
 * listTargets reads every pool, Env and template from the apiserver's watch cache and keeps what
 * the tenant may use, as a create decides it (pool-choice.ts; an admin: everything), sorted by
 * namespace/name. The console and GET /v1/pools|envs show these.
 */
export async function listTargets(deps: HostDeps, tenant: Tenant): Promise<Targets> {
  const cached = { cached: true };
  const [pools, envs, templates] = await Promise.all([
    deps.kube.listPools(undefined, cached),
    deps.kube.listEnvs(undefined, cached),
    deps.kube.listTemplates(cached),
  ]);
  const usablePools = new Set(usablePoolNames(pools.items, templates.items, tenant));
  const usableEnvs = new Set(usableEnvNames(envs.items, templates.items, tenant, deps.clusterId ?? ""));
  const visible = new Set(visibleTemplateNames(templates.items, tenant));
  const byKey = (a: SandboxPool | SandboxEnv, b: SandboxPool | SandboxEnv) => (key(a) < key(b) ? -1 : 1);
  return {
    pools: pools.items.filter((p) => tenant.admin || usablePools.has(key(p))).sort(byKey),
    envs: envs.items.filter((e) => tenant.admin || usableEnvs.has(key(e))).sort(byKey),
    templates: templates.items.filter((t) => tenant.admin || visible.has(t.metadata?.name ?? "")),
  };
}
