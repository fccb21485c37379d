// Validation and defaulting decisions for admission: pure functions from an AdmissionRequest
// to the review response; webhooks/admission.ts only does the HTTP around them.

import { GROUP, KIND, POOL_TEMPLATE_NAME_ANNOTATION } from "../api/keys.ts";
import {
  type ApiIssue,
  type ParseResult,
  parseSandboxEnv,
  parseSandboxPool,
  parseSandboxTemplate,
} from "../api/parse.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { type Check, runChecks } from "./check.ts";
import { ENV_CHECKS } from "./env-checks.ts";
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

const RULES: Record<string, KindRules> = {
  [KIND.SANDBOX_ENV]: { parse: parseSandboxEnv, checks: ENV_CHECKS },
  [KIND.SANDBOX_POOL]: { parse: parseSandboxPool, checks: POOL_CHECKS },
  [KIND.SANDBOX_TEMPLATE]: { parse: parseSandboxTemplate, checks: TEMPLATE_CHECKS },
};

function rulesFor(req: AdmissionRequest): KindRules | undefined {
  return req.kind.group === GROUP ? RULES[req.kind.kind] : undefined;
}

/** validationIssues is every schema and rule violation of obj, as field-path issues. */
export function validationIssues(kind: string, obj: unknown): ApiIssue[] {
  const rules = RULES[kind];
  if (!rules) return [{ path: "kind", message: `unsupported kind "${kind}"` }];
  const parsed = rules.parse(obj);
  if (!parsed.ok) return parsed.issues;
  return runChecks(rules.checks as readonly Check<unknown>[], parsed.value);
}

/**
 * validateRequest decides a validating review. Updates that leave the spec unchanged (labels,
 * finalizers, deletion) are always allowed, so an object stored under older rules can still
 * be relabelled, finalized and deleted.
 */
export function validateRequest(req: AdmissionRequest): AdmissionResponseReview {
  const rules = rulesFor(req);
  if (!rules || (req.operation !== "CREATE" && req.operation !== "UPDATE")) return allow(req.uid);
  const obj = req.object ?? {};
  if (req.operation === "UPDATE") {
    const meta = obj.metadata as { deletionTimestamp?: string } | undefined;
    if (meta?.deletionTimestamp || jsonEqual(obj.spec, req.oldObject?.spec)) return allow(req.uid);
  }
  const issues = validationIssues(req.kind.kind, obj);
  return issues.length ? deny(req.uid, req.kind.kind, issues) : allow(req.uid);
}

/**
 * mutateRequest decides a mutating review: it adds the schema defaults the object lacks (the
 * CRD's structural defaults normally got there first, so this is usually empty; it matters when
 * the installed CRD is older than this webhook) and, on pool creation, records the source
 * template in the template-name annotation. It never removes or replaces a value.
 */
export function mutateRequest(req: AdmissionRequest): AdmissionResponseReview {
  const rules = rulesFor(req);
  if (!rules || (req.operation !== "CREATE" && req.operation !== "UPDATE") || !req.object)
    return allow(req.uid);
  const parsed = rules.parse(req.object);
  // An invalid object is the validating webhook's to refuse, with the full list of reasons.
  if (!parsed.ok) return allow(req.uid);
  const ops: JsonPatchOp[] = missingFieldPatch(req.object, parsed.value);
  const spec = req.object.spec as { templateName?: string } | undefined;
  const meta = (req.object.metadata ?? {}) as { annotations?: Record<string, string> };
  if (
    req.operation === "CREATE" &&
    req.kind.kind === KIND.SANDBOX_POOL &&
    spec?.templateName &&
    !meta.annotations?.[POOL_TEMPLATE_NAME_ANNOTATION]
  ) {
    if (!meta.annotations) ops.push({ op: "add", path: "/metadata/annotations", value: {} });
    ops.push({
      op: "add",
      path: `/metadata/annotations/${escapePointer(POOL_TEMPLATE_NAME_ANNOTATION)}`,
      value: spec.templateName,
    });
  }
  return patch(req.uid, ops);
}
