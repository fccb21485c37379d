// AdmissionReview (admission.k8s.io/v1) in and out: the request shape the apiserver sends to
// our webhooks and the responses we answer with. Parsing is strict about what we rely on
// (uid, kind, operation, object) and lenient about the rest, which the apiserver may extend.
import * as v from "valibot";
import { type ApiIssue, parseWith } from "../crd/parse-with.ts";
import type { JsonPatchOp } from "../kube/json-patch.ts";

export type { JsonPatchOp } from "../kube/json-patch.ts";

const GroupVersionKind = v.object({ group: v.string(), version: v.string(), kind: v.string() });

/** AdmissionRequest is the part of a review we act on. */
export const AdmissionRequest = v.looseObject({
  uid: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  kind: GroupVersionKind,
  operation: v.picklist(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
  name: v.optional(v.string()),
  namespace: v.optional(v.string()),
  object: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
  oldObject: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
  dryRun: v.optional(v.boolean()),
  userInfo: v.optional(v.looseObject({ username: v.optional(v.string()) })),
});
export type AdmissionRequest = v.InferOutput<typeof AdmissionRequest>;

/** AdmissionReview is the envelope; only admission.k8s.io/v1 is served. */
export const AdmissionReview = v.looseObject({
  apiVersion: v.literal("admission.k8s.io/v1", 'must be "admission.k8s.io/v1"'),
  kind: v.literal("AdmissionReview", 'must be "AdmissionReview"'),
  request: AdmissionRequest,
});

/** parseAdmissionReview validates a decoded request body, reporting field paths on failure. */
export function parseAdmissionReview(body: unknown) {
  return parseWith(AdmissionReview, body);
}

/** AdmissionResponseReview is what the webhooks answer, always with HTTP 200. */
export interface AdmissionResponseReview {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  response: {
    uid: string;
    allowed: boolean;
    status?: { code: number; reason: string; message: string };
    warnings?: string[];
    patchType?: "JSONPatch";
    patch?: string;
  };
}

/** allow admits the request, optionally with warnings shown by kubectl. */
export function allow(uid: string, warnings: string[] = []): AdmissionResponseReview {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid, allowed: true, ...(warnings.length ? { warnings } : {}) },
  };
}

/**
 * deny refuses the request with HTTP 422 semantics; the message lists every reason, each
 * starting with its field path, which the apiserver returns verbatim to the client.
 */
export function deny(uid: string, kind: string, reasons: ApiIssue[]): AdmissionResponseReview {
  const message = `${kind} is invalid: ${reasons.map((r) => (r.path ? `${r.path}: ${r.message}` : r.message)).join("; ")}`;
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid, allowed: false, status: { code: 422, reason: "Invalid", message } },
  };
}

/**
 * patch admits the request with a JSONPatch (base64, as the API requires; none when empty) and
 * optional warnings shown by kubectl.
 */
export function patch(uid: string, ops: JsonPatchOp[], warnings: string[] = []): AdmissionResponseReview {
  if (ops.length === 0) return allow(uid, warnings);
  const bytes = new TextEncoder().encode(JSON.stringify(ops));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: {
      uid,
      allowed: true,
      patchType: "JSONPatch",
      patch: btoa(binary),
      ...(warnings.length ? { warnings } : {}),
    },
  };
}
