// Shared schema pieces for the agents.navix.sh kinds: Kubernetes scalar formats, metav1 types
// and the schema-extension helpers. Each schema both types the code (v.InferOutput) and is the
// source of the CRD's OpenAPI schema (lib/crd/structural-schema.ts), so a Kubernetes schema
// extension is attached with v.metadata and copied verbatim into the CRD.
import * as v from "valibot";
import { API_VERSION } from "./keys.ts";
import { atomicList, Int64, listMap, StringMap, Time } from "./scalars.ts";

export * from "./corev1.ts";
export * from "./scalars.ts";

/** CONDITION_TYPE_PATTERN is metav1.Condition's type pattern (an optional DNS prefix, then a name). */
const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
/** CONDITION_REASON_PATTERN is metav1.Condition's reason pattern (a CamelCase identifier). */
const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** ConditionStatus is a condition's status. */
export const ConditionStatus = v.picklist(["True", "False", "Unknown"]);

/** Condition is a metav1.Condition, with the upstream field constraints. */
export const Condition = v.pipe(
  v.object({
    type: v.pipe(
      v.string(),
      v.maxLength(316),
      v.regex(CONDITION_TYPE_PATTERN),
      v.description("Type of condition in CamelCase or in foo.example.com/CamelCase."),
    ),
    status: v.pipe(ConditionStatus, v.description("Status of the condition, one of True, False, Unknown.")),
    observedGeneration: v.optional(
      v.pipe(
        Int64,
        v.minValue(0),
        v.description("The .metadata.generation the condition was set based upon."),
      ),
    ),
    lastTransitionTime: v.pipe(Time, v.description("When the condition last changed status.")),
    reason: v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(1024),
      v.regex(CONDITION_REASON_PATTERN),
      v.description("Programmatic identifier of the reason for the last transition (CamelCase)."),
    ),
    message: v.pipe(
      v.string(),
      v.maxLength(32768),
      v.description("Human-readable message with details about the transition; may be empty."),
    ),
  }),
  v.description("Condition is one aspect of the current state of the resource."),
);
export type Condition = v.InferOutput<typeof Condition>;

/** Conditions is a status condition list keyed by type, as every kind here declares it. */
export const Conditions = listMap(Condition, "type");

/** LabelSelectorRequirement is one set-based requirement of a label selector. */
export const LabelSelectorRequirement = v.object({
  key: v.pipe(v.string(), v.description("The label key that the selector applies to.")),
  operator: v.pipe(
    v.string(),
    v.description("The key's relation to the values: In, NotIn, Exists, DoesNotExist."),
  ),
  values: v.optional(
    v.pipe(
      atomicList(v.string()),
      v.description("Values for In and NotIn; must be empty for Exists and DoesNotExist."),
    ),
  ),
});

/** LabelSelector is a metav1.LabelSelector; the whole selector is replaced on apply (atomic map). */
export const LabelSelector = v.pipe(
  v.object({
    matchExpressions: v.optional(
      v.pipe(atomicList(LabelSelectorRequirement), v.description("Requirements, ANDed.")),
    ),
    matchLabels: v.optional(
      v.pipe(StringMap, v.description("Exact key/value matches, ANDed with matchExpressions.")),
    ),
  }),
  v.metadata({ "x-kubernetes-map-type": "atomic" }),
);
export type LabelSelector = v.InferOutput<typeof LabelSelector>;

/**
 * ObjectMeta types the metav1.ObjectMeta fields this code reads. It is a loose object so every
 * other metadata field survives a parse; the CRD declares metadata as a bare `type: object`
 * (the apiserver validates metadata itself).
 */
export const ObjectMeta = v.looseObject({
  name: v.optional(v.string()),
  generateName: v.optional(v.string()),
  namespace: v.optional(v.string()),
  uid: v.optional(v.string()),
  resourceVersion: v.optional(v.string()),
  generation: v.optional(Int64),
  // kubectl and client libraries write `creationTimestamp: null` on objects not yet created.
  creationTimestamp: v.nullish(Time),
  deletionTimestamp: v.optional(Time),
  labels: v.optional(StringMap),
  annotations: v.optional(StringMap),
  finalizers: v.optional(v.array(v.string())),
  ownerReferences: v.optional(
    v.array(
      v.looseObject({
        apiVersion: v.string(),
        kind: v.string(),
        name: v.string(),
        uid: v.string(),
        controller: v.optional(v.boolean()),
        blockOwnerDeletion: v.optional(v.boolean()),
      }),
    ),
  ),
});
export type ObjectMeta = v.InferOutput<typeof ObjectMeta>;

/**
 * kindObject is the envelope of a top-level kind: apiVersion, kind, metadata, the required spec
 * and the optional status. apiVersion and kind are optional so a REST body may omit them; when
 * present they must name this group and kind.
 */
export function kindObject<
  const TKind extends string,
  const TSpec extends v.GenericSchema,
  const TStatus extends v.GenericSchema,
>(kind: TKind, spec: TSpec, status: TStatus) {
  return v.object({
    apiVersion: v.optional(v.pipe(v.literal(API_VERSION), v.description("Versioned schema of this object."))),
    kind: v.optional(v.pipe(v.literal(kind), v.description("REST resource this object represents."))),
    metadata: v.optional(ObjectMeta),
    spec,
    status: v.optional(status),
  });
}

/** listObject is the envelope of a list response (`<Kind>List`) as the apiserver returns it. */
export function listObject<const TKind extends string, const TItem extends v.GenericSchema>(
  kind: TKind,
  item: TItem,
) {
  return v.object({
    apiVersion: v.optional(v.literal(API_VERSION)),
    kind: v.optional(v.literal(kind)),
    metadata: v.optional(
      v.looseObject({ resourceVersion: v.optional(v.string()), continue: v.optional(v.string()) }),
    ),
    items: v.array(item),
  });
}
