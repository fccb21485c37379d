// Validation and defaulting decisions for admission: pure functions from an AdmissionRequest
// to the review response; webhooks/admission.ts only does the HTTP around them.

import { GROUP, KIND } from "../crd/keys.ts";
import { parseSandboxEnv, parseSandboxPool, parseSandboxTemplate } from "../crd/parse.ts";
import type { ApiIssue, ParseResult } from "../crd/parse-with.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { namesInstanceType } from "../env/instance-sizing.ts";
import { copyTemplate, type PoolLike, templateCopyNeeded, templateCopyOps } from "../pool/template-copy.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { type Check, runChecks } from "./check.ts";
import { ENV_CHECKS } from "./env-checks.ts";
import { type CatalogLookup, instanceTypeChecks } from "./instance-type-checks.ts";
import { missingFieldPatch } from "./missing-field-patch.ts";
import { POOL_CHECKS } from "./pool-checks.ts";
import {
  type AdmissionRequest,
  type AdmissionResponseReview,
  allow,
  deny,
  type JsonPatchOp,
  patch,
} from "./review.ts";
import { TEMPLATE_CHECKS } from "./template-checks.ts";

interface KindRules {
  parse: (obj: unknown) => ParseResult<unknown>;
  checks: readonly Check<never>[];
}

/**
 * RULES is a Map, not an object literal: a review names its kind, and a kind named "constructor"
 * or "toString" must find nothing rather than Object.prototype's members.
 */
const RULES: ReadonlyMap<string, KindRules> = new Map([
  [KIND.SANDBOX_ENV, { parse: parseSandboxEnv, checks: ENV_CHECKS }],
  [KIND.SANDBOX_POOL, { parse: parseSandboxPool, checks: POOL_CHECKS }],
  [KIND.SANDBOX_TEMPLATE, { parse: parseSandboxTemplate, checks: TEMPLATE_CHECKS }],
]);

function rulesFor(req: AdmissionRequest): KindRules | undefined {
  return req.kind.group === GROUP ? RULES.get(req.kind.kind) : undefined;
}

/**
 * validationIssues is every schema and rule violation of obj, as field-path issues; an Env is
 * also checked against the instance type catalog when one was looked up (`catalog`).
 */
export function validationIssues(kind: string, obj: unknown, catalog?: CatalogLookup): ApiIssue[] {
  const rules = RULES.get(kind);
  if (!rules) return [{ path: "kind", message: `unsupported kind "${kind}"` }];
  const parsed = rules.parse(obj);
  if (!parsed.ok) return parsed.issues;
  const checks = [
    ...(rules.checks as readonly Check<unknown>[]),
    ...(kind === KIND.SANDBOX_ENV && catalog ? (instanceTypeChecks(catalog) as Check<unknown>[]) : []),
  ];
  return runChecks(checks, parsed.value);
}

/**
 * catalogToRead: the review needs the instance type catalog, because it would create or change
 * the spec of an Env that names an instance type (validateRequest allows the rest unread).
 */
export function catalogToRead(req: AdmissionRequest): boolean {
  if (req.kind.group !== GROUP || req.kind.kind !== KIND.SANDBOX_ENV || !req.object) return false;
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return false;
  const parsed = parseSandboxEnv(req.object);
  return parsed.ok && namesInstanceType(parsed.value);
}

/**
 * validateRequest decides a validating review. Updates that leave the spec unchanged (labels,
 * finalizers, deletion) are always allowed, so an object stored under older rules can still
 * be relabelled, finalized and deleted. An Env naming instance types is checked against
 * `catalog` (catalogToRead says when the webhook must look it up).
 */
export function validateRequest(req: AdmissionRequest, catalog?: CatalogLookup): AdmissionResponseReview {
  const rules = rulesFor(req);
  if (!rules || (req.operation !== "CREATE" && req.operation !== "UPDATE")) return allow(req.uid);
  const obj = req.object ?? {};
  if (req.operation === "UPDATE") {
    const meta = obj.metadata as { deletionTimestamp?: string } | undefined;
    if (meta?.deletionTimestamp || jsonEqual(obj.spec, req.oldObject?.spec)) return allow(req.uid);
  }
  const issues = validationIssues(req.kind.kind, obj, catalog);
  return issues.length ? deny(req.uid, req.kind.kind, issues) : allow(req.uid);
}

/** TemplateLookup is the template a pool's defaulting read: found, missing (null), or unreadable. */
export type TemplateLookup = { template: SandboxTemplate | null } | { error: string };

/**
 * templateToCopy names the template a pool review needs read, so the webhook reads at most one
 * (and nothing for any other review): a pool created or updated with a templateName whose copy
 * it does not carry yet (templateCopyNeeded: not an Env member, copy not recorded).
 */
export function templateToCopy(req: AdmissionRequest): string | undefined {
  if (req.kind.group !== GROUP || req.kind.kind !== KIND.SANDBOX_POOL || !req.object) return undefined;
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return undefined;
  const parsed = parseSandboxPool(req.object);
  return parsed.ok && templateCopyNeeded(parsed.value) ? parsed.value.spec.templateName : undefined;
}

/**
 * templateCopyPatch copies the looked-up template into the pool under review (copyTemplate:
 * fields the pool leaves unset, labels, annotations, the copy's record), or explains in a
 * warning why the copy is left to the pool's copy-template step.
 */
function templateCopyPatch(
  obj: Record<string, unknown>,
  pool: SandboxPool,
  lookup: TemplateLookup,
): { ops: JsonPatchOp[]; warnings: string[] } {
  const name = pool.spec.templateName ?? "";
  if ("error" in lookup)
    return {
      ops: [],
      warnings: [
        `SandboxTemplate "${name}" could not be read now (${lookup.error}); the pool's reconcile copies it`,
      ],
    };
  if (!lookup.template)
    return {
      ops: [],
      warnings: [
        `SandboxTemplate "${name}" does not exist: the pool creates no pods until it does (see its ReplicaFailure condition)`,
      ],
    };
  // The copy is decided on the defaulted pool (so a field equal to the template's once defaulted
  // is no override) and patched onto the object as submitted.
  return {
    ops: templateCopyOps(obj as unknown as PoolLike, copyTemplate(pool, lookup.template)),
    warnings: [],
  };
}

/**
 * mutateRequest decides a mutating review: it adds the schema defaults the object lacks (the
 * CRD's structural defaults normally got there first, so this is usually empty; it matters when
 * the installed CRD is older than this webhook) and, for a pool that names a template it has not
 * copied yet, copies the template in (`lookup` is that template, read by the webhook; see
 * templateToCopy). It never removes a value the object sets.
 */
export function mutateRequest(req: AdmissionRequest, lookup?: TemplateLookup): AdmissionResponseReview {
  const rules = rulesFor(req);
  if (!rules || (req.operation !== "CREATE" && req.operation !== "UPDATE") || !req.object)
    return allow(req.uid);
  const parsed = rules.parse(req.object);
  // An invalid object is the validating webhook's to refuse, with the full list of reasons.
  if (!parsed.ok) return allow(req.uid);
  const ops: JsonPatchOp[] = missingFieldPatch(req.object, parsed.value);
  if (!lookup || templateToCopy(req) === undefined) return patch(req.uid, ops);
  const copy = templateCopyPatch(req.object, parsed.value as SandboxPool, lookup);
  return patch(req.uid, [...ops, ...copy.ops], copy.warnings);
}
