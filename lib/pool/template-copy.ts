// A pool that names a SandboxTemplate (spec.templateName) carries its own copy of the template's
// embedded fields: the copy is made once, when the pool is created (or, when the defaulting
// webhook was down, by the copy-template step), and only replaced when an operator refreshes the
// pool on purpose. So a template edit never rolls existing pools behind their owners' backs, and
// rendering a pod never needs the template (ADR 0014).
import * as v from "valibot";
import {
  POOL_OVERRIDES_ANNOTATION,
  POOL_TEMPLATE_NAME_ANNOTATION,
  POOL_TEMPLATE_VERSION_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxPool, SandboxPoolSpec } from "../crd/sandbox-pool.ts";
import { EmbeddedSandboxTemplate, type SandboxTemplate } from "../crd/sandbox-template.ts";
import { fieldOps, type JsonPatchOp, mapOps } from "../kube/json-patch.ts";
import { hasEnvOwner } from "../membership/env-ownership.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { syncAnnotationsFromTemplate, syncLabelsFromTemplate } from "./render-pod.ts";

/** EMBEDDED_FIELDS are the template fields a pool copies (upstream's EmbeddedSandboxTemplate). */
export const EMBEDDED_FIELDS = ["template", "idleImage", "runtimes"] as const;
type EmbeddedField = (typeof EMBEDDED_FIELDS)[number];

/**
 * PoolTemplateOverrides are the embedded fields a pool sets itself, differently from its template;
 * kept as JSON in the overrides annotation so a refresh can put them back on a newer template.
 */
export type PoolTemplateOverrides = Partial<Pick<SandboxPoolSpec, EmbeddedField>>;

/** PoolLike is the part of a pool the copy reads: an admission object or a stored pool. */
export type PoolLike = Pick<SandboxPool, "metadata" | "spec">;

/** TemplateCopy is what a pool looks like once its template is copied in (or refreshed). */
export interface TemplateCopy {
  embedded: PoolTemplateOverrides;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/**
 * templateCopyNeeded says whether a pool still lacks its template copy: it names a template, is
 * not an Env member (the Env renders those), and does not record this template's copy yet (the
 * template-name, template-version and overrides annotations, written together by every copy).
 * A pool whose templateName was changed needs a fresh copy of the new template.
 */
export function templateCopyNeeded(pool: PoolLike): boolean {
  const name = pool.spec.templateName;
  if (!name || hasEnvOwner(pool)) return false;
  const annotations = pool.metadata?.annotations ?? {};
  return (
    annotations[POOL_TEMPLATE_NAME_ANNOTATION] !== name ||
    annotations[POOL_TEMPLATE_VERSION_ANNOTATION] === undefined ||
    annotations[POOL_OVERRIDES_ANNOTATION] === undefined
  );
}

function embeddedOf(spec: Partial<Record<EmbeddedField, unknown>>): PoolTemplateOverrides {
  const out: Record<string, unknown> = {};
  for (const field of EMBEDDED_FIELDS) if (spec[field] !== undefined) out[field] = spec[field];
  return out as PoolTemplateOverrides;
}

/** recorded is the copy's bookkeeping: the template, its version and the overrides, as annotations. */
function recorded(
  pool: PoolLike,
  template: SandboxTemplate,
  overrides: PoolTemplateOverrides,
): Pick<TemplateCopy, "labels" | "annotations"> {
  const meta = template.metadata ?? {};
  return {
    labels: syncLabelsFromTemplate(pool.metadata?.labels ?? {}, meta.labels),
    annotations: {
      ...syncAnnotationsFromTemplate(pool.metadata?.annotations ?? {}, meta.annotations),
      [POOL_TEMPLATE_NAME_ANNOTATION]: template.metadata?.name ?? pool.spec.templateName ?? "",
      [POOL_TEMPLATE_VERSION_ANNOTATION]: template.spec.version ?? "",
      [POOL_OVERRIDES_ANNOTATION]: JSON.stringify(overrides),
    },
  };
}

/**
 * copyTemplate fills a pool from its template: every embedded field the pool leaves unset comes
 * from the template, a field the pool sets stays (inline fields win), and the ones that differ
 * from the template's are its overrides. A pool that already records the copy of another
 * template (its templateName was changed) is rebuilt from the new template and its recorded
 * overrides instead, so the old template's fields do not pass for its own. The template's labels and annotations are synced onto
 * the pool (template values win; sync-source, docs and pool-docs are never copied) and the copy
 * is recorded: template-name, template-version (the template's spec.version now, "" when it has
 * none) and overrides.
 */
export function copyTemplate(pool: PoolLike, template: SandboxTemplate): TemplateCopy {
  // A pool switched to another template carries the old template's copy: what is its own are
  // the recorded overrides, not every field, so it is rebuilt as a refresh would.
  const annotations = pool.metadata?.annotations ?? {};
  const recordedName = annotations[POOL_TEMPLATE_NAME_ANNOTATION];
  if (recordedName && recordedName !== pool.spec.templateName && annotations[POOL_OVERRIDES_ANNOTATION]) {
    const rebuilt = refreshFromTemplate(pool, template);
    if (rebuilt.ok) return rebuilt.copy;
  }
  const own = embeddedOf(pool.spec);
  const theirs = embeddedOf(template.spec);
  const overrides: Record<string, unknown> = {};
  for (const field of EMBEDDED_FIELDS) {
    if (own[field] !== undefined && !jsonEqual(own[field], theirs[field])) overrides[field] = own[field];
  }
  return {
    embedded: { ...theirs, ...own },
    ...recorded(pool, template, overrides as PoolTemplateOverrides),
  };
}

/**
 * refreshFromTemplate re-renders a pool from the current template on purpose: the template's
 * embedded fields, then the pool's recorded overrides on top (a field neither has is dropped).
 * The overrides annotation must be what a copy wrote; anything else is refused with the reason,
 * rather than guessed at.
 */
export function refreshFromTemplate(
  pool: PoolLike,
  template: SandboxTemplate,
): { ok: true; copy: TemplateCopy } | { ok: false; reason: string } {
  const raw = pool.metadata?.annotations?.[POOL_OVERRIDES_ANNOTATION] ?? "{}";
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, reason: `annotation ${POOL_OVERRIDES_ANNOTATION} is not JSON` };
  }
  const parsed = v.safeParse(EmbeddedSandboxTemplate, json);
  if (!parsed.success)
    return {
      ok: false,
      reason: `annotation ${POOL_OVERRIDES_ANNOTATION} is not a set of template fields: ${parsed.issues[0]?.message}`,
    };
  const overrides = embeddedOf(parsed.output);
  return {
    ok: true,
    copy: {
      embedded: { ...embeddedOf(template.spec), ...overrides },
      ...recorded(pool, template, overrides),
    },
  };
}

/**
 * templateCopyOps is the JSON Patch that turns the pool into the copy: each embedded field that
 * differs, each label and annotation that differs. Empty when the pool already is the copy.
 * Callers that write a stored pool put a resourceVersion test in front.
 */
export function templateCopyOps(pool: PoolLike, copy: TemplateCopy): JsonPatchOp[] {
  return [
    ...fieldOps("/spec", pool.spec, copy.embedded, EMBEDDED_FIELDS, jsonEqual),
    ...mapOps("/metadata/labels", pool.metadata?.labels, copy.labels),
    ...mapOps("/metadata/annotations", pool.metadata?.annotations, copy.annotations),
  ];
}
