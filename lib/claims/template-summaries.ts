// What a tenant's templates are made of and whether a create can use them, decided from the
// objects GET /v1/templates and E2B's GET /templates read (functions/api/list-targets.ts keeps
// only what the tenant may use). A create resolves a template to the Env built on it (on a host
// that routes Envs) or else to the pool made from it with the most idle pods (resolve-pool.ts);
// templateServing asks the same functions, so "ready" here means "a create would find a target".
import type { V1ResourceRequirements } from "@kubernetes/client-node";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { firstContainerResources } from "../env/env-status.ts";
import { TEMPLATE_CONDITION, templateConditions } from "../template/template-status.ts";
import type { Tenant } from "./api-keys.ts";
import { pickTemplateEnv, pickTemplatePool, usableEnvNames } from "./pool-choice.ts";

/** TemplateServing is what serves a template's creates: its pools and Envs, and whether it can. */
export interface TemplateServing {
  /** pools are the live pools made from it ("namespace/name", sorted): Env members among them. */
  pools: string[];
  /** envs are the live Envs built on it with members in this cluster ("namespace/name", sorted). */
  envs: string[];
  /** ready: a create naming it finds an Env or a pool, and its pod template renders pods. */
  ready: boolean;
  /** degraded: its pod template cannot become a pod, or pods rendered from it are refused. */
  degraded: boolean;
  /** why it is not ready, when it is not. */
  why?: string;
}

const key = (o: SandboxPool | SandboxEnv) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

/**
 * templateServing decides what serves a template, from the pools and Envs the tenant may use
 * (listTargets): the same pickTemplateEnv / pickTemplatePool a create asks (an Env only when the
 * host knows its cluster ID, as resolvePool), and the template's Degraded condition as
 * templateConditions computes it now (not as its status last recorded it).
 */
export function templateServing(
  template: SandboxTemplate,
  pools: readonly SandboxPool[],
  envs: readonly SandboxEnv[],
  tenant: Tenant,
  clusterId: string | undefined,
): TemplateServing {
  const name = template.metadata?.name ?? "";
  const own = pools.filter((p) => p.spec.templateName === name && !p.metadata?.deletionTimestamp);
  const ownEnvs = clusterId
    ? usableEnvNames(
        envs.filter((e) => e.spec.templateRef.name === name),
        [template],
        tenant,
        clusterId,
      )
    : [];
  const served = (clusterId && pickTemplateEnv(envs, name, clusterId)) || pickTemplatePool(pools, name);
  const degraded = templateConditions(template, pools).find(
    (c) => c.type === TEMPLATE_CONDITION.DEGRADED && c.status === "True",
  );
  const why = degraded
    ? degraded.message
    : served
      ? undefined
      : "no pool or Env is made from it yet: a create naming it is refused until one is";
  return {
    pools: own.map(key).sort(),
    envs: ownEnvs,
    ready: why === undefined,
    degraded: degraded !== undefined,
    ...(why ? { why } : {}),
  };
}

/** isPublicTemplate: every tenant may use it (no visibility rule, or a rule naming no team and no user). */
export function isPublicTemplate(template: SandboxTemplate | undefined): boolean {
  if (!template) return false;
  const rules = template.spec.visibility?.rules ?? [];
  return rules.length === 0 || rules.some((r) => !r.team && (r.users ?? []).length === 0);
}

/** TemplateSummary is one template as GET /v1/templates lists it. */
export interface TemplateSummary extends TemplateServing {
  /** name is the template's (cluster-scoped) name: what a create's `template` (E2B's templateID) takes. */
  name: string;
  /** aliases are the names a create accepts for it: its name (a pool or Env is named on its own). */
  aliases: string[];
  description?: string;
  version?: string;
  public: boolean;
  /** resources are the pod template's main container (containers[0]) requests and limits, as written. */
  resources?: V1ResourceRequirements;
  createdAt?: string;
}

/** templateSummary is a template's summary; `serving` is templateServing's answer for it. */
export function templateSummary(template: SandboxTemplate, serving: TemplateServing): TemplateSummary {
  const name = template.metadata?.name ?? "";
  const resources = firstContainerResources(template.spec);
  const created = template.metadata?.creationTimestamp;
  return {
    name,
    aliases: [name],
    ...(template.spec.description ? { description: template.spec.description } : {}),
    ...(template.spec.version ? { version: template.spec.version } : {}),
    public: isPublicTemplate(template),
    ...(resources ? { resources } : {}),
    ...serving,
    ...(created ? { createdAt: new Date(created).toISOString() } : {}),
  };
}

/** Targets are what listTargets read for a tenant: the pools, Envs and templates it may use. */
export interface TemplateTargets {
  pools: readonly SandboxPool[];
  envs: readonly SandboxEnv[];
  templates: readonly SandboxTemplate[];
}

/** templateSummaries lists the tenant's templates (GET /v1/templates), sorted by name. */
export function templateSummaries(
  targets: TemplateTargets,
  tenant: Tenant,
  clusterId: string | undefined,
): TemplateSummary[] {
  return [...targets.templates]
    .map((t) => templateSummary(t, templateServing(t, targets.pools, targets.envs, tenant, clusterId)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
