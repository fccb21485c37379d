// The template revision an Env member renders from. Seed 002 (EnvClusterMember): "Template
// upgrades do NOT auto-propagate into Spec; an explicit RefreshMember API ... is the way to align
// an existing member with a newer Template revision." So a member pool records what it took from
// the template when it was created or last refreshed (a copy, in one annotation), and the Env's
// runs render it from that copy: a template edit leaves existing members as they are, a new member
// takes the template as it is now (ADR 0033).
import * as v from "valibot";
import {
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  MEMBER_TEMPLATE_ANNOTATION,
  POOL_TEMPLATE_NAME_ANNOTATION,
  POOL_TEMPLATE_VERSION_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { managedKeys } from "../lifecycle/lifecycle-keys.ts";
import type { EnvClusterMember } from "../membership/env-members.ts";
import { syncAnnotationsFromTemplate, syncLabelsFromTemplate } from "../pool/render-pod.ts";
import { canonicalJson } from "../util/canonical-json.ts";
import { sha256Hex } from "../util/sha256.ts";

/** REVISION_LENGTH is how many hex digits of the copy's SHA-256 name a revision. */
const REVISION_LENGTH = 10;

const StringMap = v.record(v.string(), v.string());

/** RecordedCopy is the shape a member pool's copy annotation must have to be rendered from. */
const RecordedCopy = v.object({
  name: v.string(),
  version: v.string(),
  labels: StringMap,
  annotations: StringMap,
  template: v.optional(v.record(v.string(), v.unknown())),
  idleImage: v.optional(v.string()),
  runtimes: v.optional(v.array(v.record(v.string(), v.unknown()))),
});

/**
 * TemplateRevision is what a member's render takes from its template: the template's name and
 * version, its labels and annotations as synced onto pools, and its embedded fields.
 */
export interface TemplateRevision {
  name: string;
  version: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  template?: Record<string, unknown> | undefined;
  idleImage?: string | undefined;
  runtimes?: SandboxTemplate["spec"]["runtimes"];
}

/** revisionOf is the template as it is now, as a member renders from it. */
export function revisionOf(template: SandboxTemplate): TemplateRevision {
  const { spec, metadata } = template;
  return {
    name: metadata?.name ?? "",
    version: spec.version ?? "",
    labels: syncLabelsFromTemplate({}, metadata?.labels),
    annotations: syncAnnotationsFromTemplate({}, metadata?.annotations),
    ...(spec.template ? { template: spec.template } : {}),
    ...(spec.idleImage ? { idleImage: spec.idleImage } : {}),
    ...(spec.runtimes ? { runtimes: spec.runtimes } : {}),
  };
}

/**
 * revisionHash names a revision in messages: the first 10 hex digits of the SHA-256 of its
 * canonical JSON (computed only for a message: comparing revisions compares their JSON).
 */
export function revisionHash(revision: TemplateRevision): string {
  return sha256Hex(canonicalJson(revision)).slice(0, REVISION_LENGTH);
}

/** sameRevision: two revisions have the same content (their canonical JSON is equal). */
export function sameRevision(a: TemplateRevision, b: TemplateRevision): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** revisionAnnotations record a revision on the member pool: its copy, as canonical JSON. */
export function revisionAnnotations(revision: TemplateRevision): Record<string, string> {
  return { [MEMBER_TEMPLATE_ANNOTATION]: canonicalJson(revision) };
}

/** RECORD_ANNOTATIONS are the annotations revisionAnnotations writes. */
export const RECORD_ANNOTATIONS: readonly string[] = [MEMBER_TEMPLATE_ANNOTATION];

/**
 * recordedRevision is the revision a member pool records, undefined when it records none or its
 * copy annotation is not one (not JSON, or not the shape a copy has).
 */
export function recordedRevision(pool: Pick<SandboxPool, "metadata">): TemplateRevision | undefined {
  const raw = pool.metadata?.annotations?.[MEMBER_TEMPLATE_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const json: unknown = JSON.parse(raw);
    // Checked, never transformed (a parse would add defaults): the copy is rendered as it was stored.
    return v.is(RecordedCopy, json) ? (json as TemplateRevision) : undefined;
  } catch {
    return undefined;
  }
}

/** kept are the pool's values of the keys an Env stamped there (managed keys) that the member's config does not set. */
function kept(
  live: Record<string, string>,
  keys: readonly string[],
  config: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) {
    const value = live[k];
    if (value !== undefined && !(config && k in config)) out[k] = value;
  }
  return out;
}

/**
 * derivedRevision is the revision of a member pool made before members recorded one: what it
 * carries is taken as what its template gave it (its pod template, idle image and runtimes, the
 * stamped labels and annotations its member's config does not set, its template-name and
 * template-version), so an upgrade changes nothing. The Env's own changes are in that pod
 * template already (image, resources, pull Secret), and a render puts them there again. Undefined
 * for a pool without a pod template.
 */
export function derivedRevision(pool: SandboxPool, member: EnvClusterMember): TemplateRevision | undefined {
  const template = pool.spec.template;
  if (!template) return undefined;
  const annotations = pool.metadata?.annotations ?? {};
  return {
    name: annotations[POOL_TEMPLATE_NAME_ANNOTATION] ?? pool.spec.templateName ?? "",
    version: annotations[POOL_TEMPLATE_VERSION_ANNOTATION] ?? "",
    labels: kept(
      pool.metadata?.labels ?? {},
      managedKeys(pool, MANAGED_LABEL_KEYS_ANNOTATION),
      member.config?.labels,
    ),
    annotations: kept(
      annotations,
      managedKeys(pool, MANAGED_ANNOTATION_KEYS_ANNOTATION),
      member.config?.annotations,
    ),
    template,
    ...(pool.spec.idleImage ? { idleImage: pool.spec.idleImage } : {}),
    ...(pool.spec.runtimes ? { runtimes: pool.spec.runtimes } : {}),
  };
}

/** matchesRef: the revision is of the Env's template (and at the version it pins, if it pins one). */
export function matchesRef(revision: TemplateRevision, env: SandboxEnv): boolean {
  const ref = env.spec.templateRef;
  return revision.name === ref.name && (!ref.version || revision.version === ref.version);
}

/**
 * currentRevision is the revision a new member (or a refresh) takes: the Env's template as it is
 * now, undefined when it does not exist or is not at the version the Env pins.
 */
export function currentRevision(
  env: SandboxEnv,
  template: SandboxTemplate | null,
): TemplateRevision | undefined {
  const pinned = env.spec.templateRef.version;
  if (!template || (pinned && template.spec.version !== pinned)) return undefined;
  return revisionOf(template);
}

/** describeRevision names a revision for a message: `revision <hash> (version "v1")`. */
export function describeRevision(revision: TemplateRevision): string {
  return `revision ${revisionHash(revision)}${revision.version ? ` (version "${revision.version}")` : ""}`;
}
