// Which pools, Envs and templates a tenant may claim from, decided from objects already read.
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { localMembers } from "../membership/env-members.ts";
import type { Tenant } from "./api-keys.ts";
import { templateVisibleTo } from "./visibility.ts";

/**
 * poolUsableBy: a tenant may claim from a pool (or Env) built on `templateName` when it can see
 * that template. One that names no template (stamped by hand) is open to everyone; one whose
 * template is gone is closed to all but admins: the visibility rules went with the template, so
 * nobody can say whom they let in, and a deleted template must not open its pools to every tenant.
 */
export function poolUsableBy(
  templateName: string | undefined,
  template: SandboxTemplate | undefined,
  tenant: Tenant,
): boolean {
  if (!templateName) return true;
  if (!template) return tenant.admin === true;
  return templateVisibleTo(template.spec.visibility, tenant);
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
    .filter((p) => poolUsableBy(p.spec.templateName, byName.get(p.spec.templateName ?? ""), tenant))
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

/** liveEnv: the Env is not being deleted and lists members for clusterId. */
function liveEnv(env: SandboxEnv, clusterId: string): boolean {
  return !env.metadata?.deletionTimestamp && localMembers(env, clusterId).length > 0;
}

/**
 * pickTemplateEnv is the live Env built on templateName (its templateRef) with local members,
 * the one with the most idle Pods when several are (ties: namespace/name), or undefined.
 */
export function pickTemplateEnv(
  envs: readonly SandboxEnv[],
  templateName: string,
  clusterId: string,
): SandboxEnv | undefined {
  const key = (e: SandboxEnv) => `${e.metadata?.namespace}/${e.metadata?.name}`;
  return envs
    .filter((e) => e.spec.templateRef.name === templateName && liveEnv(e, clusterId))
    .sort(
      (a, b) => (b.status?.idleReplicas ?? 0) - (a.status?.idleReplicas ?? 0) || (key(a) < key(b) ? -1 : 1),
    )[0];
}

/** usableEnvNames lists "namespace/name" of every live Env the tenant may claim from, sorted. */
export function usableEnvNames(
  envs: readonly SandboxEnv[],
  templates: readonly SandboxTemplate[],
  tenant: Tenant,
  clusterId: string,
): string[] {
  const byName = new Map(templates.map((t) => [t.metadata?.name ?? "", t]));
  return envs
    .filter(
      (e) =>
        liveEnv(e, clusterId) &&
        poolUsableBy(e.spec.templateRef.name, byName.get(e.spec.templateRef.name), tenant),
    )
    .map((e) => `${e.metadata?.namespace}/${e.metadata?.name}`)
    .sort();
}
