// Which pools and templates a tenant may claim from, decided from objects already read.
import type { SandboxPool } from "../api/sandbox-pool.ts";
import type { SandboxTemplate } from "../api/sandbox-template.ts";
import type { Tenant } from "./api-keys.ts";
import { templateVisibleTo } from "./visibility.ts";

/**
 * poolUsableBy: a tenant may claim from a pool whose template it can see; a pool without a
 * template, or whose template is gone, is open to everyone.
 */
export function poolUsableBy(template: SandboxTemplate | undefined, tenant: Tenant): boolean {
  return template === undefined || templateVisibleTo(template.spec.visibility, tenant);
}

/** pickTemplatePool is the live pool created from templateName with the most idle pods. */
export function pickTemplatePool(
  pools: readonly SandboxPool[],
  templateName: string,
): SandboxPool | undefined {
  return pools
    .filter((p) => p.spec.templateName === templateName && !p.metadata?.deletionTimestamp)
    .sort((a, b) => (b.status?.idleReplicas ?? 0) - (a.status?.idleReplicas ?? 0))[0];
}

/** usablePoolNames lists "namespace/name" of every live pool the tenant may claim from, sorted. */
export function usablePoolNames(
  pools: readonly SandboxPool[],
  templates: readonly SandboxTemplate[],
  tenant: Tenant,
): string[] {
  const byName = new Map(templates.map((t) => [t.metadata?.name ?? "", t]));
  return pools
    .filter((p) => !p.metadata?.deletionTimestamp)
    .filter((p) => !p.spec.templateName || poolUsableBy(byName.get(p.spec.templateName), tenant))
    .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)
    .sort();
}

/** visibleTemplateNames lists the templates the tenant can see, sorted. */
export function visibleTemplateNames(templates: readonly SandboxTemplate[], tenant: Tenant): string[] {
  return templates
    .filter((t) => templateVisibleTo(t.spec.visibility, tenant))
    .map((t) => t.metadata?.name ?? "")
    .sort();
}
