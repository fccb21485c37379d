// What E2B's template endpoints show: the SandboxTemplates a key's team may use and the pools
// (as "namespace/name"), the two things an E2B create's templateID names (nativeCreate: a "/" names
// a pool, else a template, which a create routes to its Env or pool). Envs are left out: a
// templateID cannot name one. E2B's fields we cannot know get fixed, documented values (E2bTemplate).
import type { Tenant } from "../claims/api-keys.ts";
import {
  isPublicTemplate,
  type TemplateServing,
  type TemplateTargets,
  templateServing,
} from "../claims/template-summaries.ts";
import type { ObjectMeta } from "../crd/common.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { sha256Hex } from "../util/sha256.ts";
import { type E2bSettings, resourcesOf } from "./answers.ts";

/** E2bBuildStatus is E2B's TemplateBuildStatus. */
export type E2bBuildStatus = "building" | "waiting" | "ready" | "error";

/** E2bTemplate is E2B's Template (spec/openapi.yml), every required field present. */
export interface E2bTemplate {
  /** templateID is what a create's templateID takes: the template's name, or a pool's "namespace/name". */
  templateID: string;
  /** buildID names the spec as it is now (metadata.uid and generation hashed into a UUID): there are no builds. */
  buildID: string;
  /** cpuCount, memoryMB, diskSizeMB: the main container's limits (else requests), as its sandboxes report them. */
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  /** public: every tenant may use it (no visibility rule restricts it). */
  public: boolean;
  aliases: string[];
  names: string[];
  createdAt: string;
  /** updatedAt is the last write to its spec or metadata (managedFields), else createdAt. */
  updatedAt: string;
  /** createdBy: always null; templates are applied with kubectl, not by a team's user. */
  createdBy: null;
  /** lastSpawnedAt and spawnCount: not kept per template here, so null and 0. */
  lastSpawnedAt: null;
  spawnCount: number;
  /** buildCount is metadata.generation: how many specs it has had, the nearest thing to a build. */
  buildCount: number;
  envdVersion: string;
  /** buildStatus: "error" when it cannot render pods, "ready" when a create finds a target, else "waiting". */
  buildStatus: E2bBuildStatus;
}

/** E2bTemplateBuild is E2B's TemplateBuild: the one "build" a template has, its spec as it is now. */
export interface E2bTemplateBuild {
  buildID: string;
  status: E2bBuildStatus;
  createdAt: string;
  updatedAt: string;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  envdVersion: string;
}

const EPOCH = new Date(0).toISOString();

/** iso is an RFC 3339 time as E2B writes them, or undefined when there is none. */
function iso(t: unknown): string | undefined {
  if (typeof t !== "string" && !(t instanceof Date)) return undefined;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** lastWrite is the latest managedFields time of a write to anything but status, else createdAt. */
function lastWrite(meta: ObjectMeta | undefined, createdAt: string): string {
  const fields = (meta as { managedFields?: { time?: unknown; subresource?: string }[] } | undefined)
    ?.managedFields;
  const times = (Array.isArray(fields) ? fields : [])
    .filter((f) => f.subresource !== "status")
    .map((f) => iso(f.time))
    .filter((t): t is string => t !== undefined);
  // ISO 8601 UTC times of one precision sort as they happened.
  return [createdAt, ...times].sort().at(-1) ?? createdAt;
}

/**
 * buildIdOf is a UUID (version 8: derived, not random) of the object's uid and generation, so it
 * is stable while the spec is and changes when the spec does, as E2B's buildID of the last build.
 */
export function buildIdOf(meta: ObjectMeta | undefined): string {
  const h = sha256Hex(`${meta?.uid ?? meta?.name ?? ""}/${meta?.generation ?? 0}`);
  const variant = ((Number.parseInt(h[16] ?? "0", 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** common is what a template and a pool entry share: dates, ids, resources, from one object. */
function common(
  id: string,
  meta: ObjectMeta | undefined,
  podTemplate: Record<string, unknown> | undefined,
  settings: E2bSettings,
) {
  const createdAt = iso(meta?.creationTimestamp) ?? EPOCH;
  const spec = (podTemplate?.spec ?? {}) as NonNullable<Parameters<typeof resourcesOf>[0]["spec"]>;
  return {
    templateID: id,
    buildID: buildIdOf(meta),
    ...resourcesOf({ spec }),
    aliases: [id],
    names: [id],
    createdAt,
    updatedAt: lastWrite(meta, createdAt),
    createdBy: null,
    lastSpawnedAt: null,
    spawnCount: 0,
    buildCount: Number(meta?.generation ?? 1),
    envdVersion: settings.envdVersion,
  };
}

/** e2bTemplate shows a SandboxTemplate as E2B's Template; `serving` is templateServing's answer. */
export function e2bTemplate(
  template: SandboxTemplate,
  serving: TemplateServing,
  settings: E2bSettings,
): E2bTemplate {
  return {
    ...common(template.metadata?.name ?? "", template.metadata, template.spec.template, settings),
    public: isPublicTemplate(template),
    buildStatus: serving.degraded ? "error" : serving.ready ? "ready" : "waiting",
  };
}

/**
 * e2bPoolTemplate shows a pool as E2B's Template named "namespace/name": its own copy of the pod
 * template (a pool keeps one), public as its template is (a pool naming none is open to all).
 * A live pool the tenant may use is what a create claims from, so it is ready.
 */
export function e2bPoolTemplate(
  pool: SandboxPool,
  template: SandboxTemplate | undefined,
  settings: E2bSettings,
): E2bTemplate {
  const id = `${pool.metadata?.namespace ?? ""}/${pool.metadata?.name ?? ""}`;
  return {
    ...common(id, pool.metadata, pool.spec.template, settings),
    public: pool.spec.templateName ? isPublicTemplate(template) : true,
    buildStatus: "ready",
  };
}

/**
 * e2bTemplateWithBuilds is E2B's TemplateWithBuilds (GET /templates/{templateID}) with the
 * Template's fields kept beside it (CPU and memory at the top as well as in the build): one build,
 * the spec as it is now.
 */
export function e2bTemplateWithBuilds(t: E2bTemplate): E2bTemplate & { builds: E2bTemplateBuild[] } {
  return {
    ...t,
    builds: [
      {
        buildID: t.buildID,
        status: t.buildStatus,
        createdAt: t.updatedAt,
        updatedAt: t.updatedAt,
        cpuCount: t.cpuCount,
        memoryMB: t.memoryMB,
        diskSizeMB: t.diskSizeMB,
        envdVersion: t.envdVersion,
      },
    ],
  };
}

/**
 * e2bTemplates lists what a key's team may name as an E2B templateID (GET /templates): its
 * templates, then the live pools it may claim from, each sorted by templateID.
 */
export function e2bTemplates(
  targets: TemplateTargets,
  tenant: Tenant,
  clusterId: string | undefined,
  settings: E2bSettings,
): E2bTemplate[] {
  const byName = new Map(targets.templates.map((t) => [t.metadata?.name ?? "", t]));
  const byId = (a: E2bTemplate, b: E2bTemplate) =>
    a.templateID < b.templateID ? -1 : a.templateID > b.templateID ? 1 : 0;
  const templates = targets.templates.map((t) =>
    e2bTemplate(t, templateServing(t, targets.pools, targets.envs, tenant, clusterId), settings),
  );
  const pools = targets.pools
    .filter((p) => !p.metadata?.deletionTimestamp)
    .map((p) => e2bPoolTemplate(p, byName.get(p.spec.templateName ?? ""), settings));
  return [...templates.sort(byId), ...pools.sort(byId)];
}

/** findE2bTemplate is the listed template a templateID or alias names, if the team may use it. */
export function findE2bTemplate(listed: readonly E2bTemplate[], idOrAlias: string): E2bTemplate | undefined {
  return listed.find((t) => t.templateID === idOrAlias || t.aliases.includes(idOrAlias));
}
