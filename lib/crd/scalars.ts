// Kubernetes scalar formats and the schema-extension helpers shared by every agents.navix.sh
// schema. Re-exported from common.ts; kept apart so corev1.ts can use them without an import
// cycle.
//
// Runtime-only refinements use v.check / v.rawCheck: they are not emitted into the CRD (the
// structural-schema conversion ignores them), so they only repeat or tighten what the apiserver
// enforces (int32 range, list-map key uniqueness, the CEL rules).
import * as v from "valibot";

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/**
 * Int32 is a Kubernetes int32: an integer with `format: int32`. The 32-bit range is checked at
 * runtime only (controller-gen emits no bounds either).
 */
export const Int32 = v.pipe(
  v.number(),
  v.integer(),
  v.check((n) => n >= INT32_MIN && n <= INT32_MAX, "Invalid value: must fit in a 32-bit signed integer"),
  v.metadata({ format: "int32" }),
);

/**
 * Int64 is a Kubernetes int64: an integer with `format: int64`. JavaScript numbers hold 53 bits
 * exactly, which covers every value this API stores (generations, grace periods).
 */
export const Int64 = v.pipe(v.number(), v.integer(), v.metadata({ format: "int64" }));

/** NonNegativeInt32 is an Int32 with `minimum: 0`, the seed's `+kubebuilder:validation:Minimum=0`. */
export const NonNegativeInt32 = v.pipe(Int32, v.minValue(0));

/** Time is a metav1.Time: an RFC 3339 timestamp string (`format: date-time`). */
export const Time = v.pipe(v.string(), v.isoTimestamp());

/**
 * GO_DURATION_PATTERN is Go's time.ParseDuration grammar: an optional sign, then "0" or a
 * sequence of decimal numbers (optional fraction) each with a unit ns, us, µs, μs, ms, s, m, h.
 */
export const GO_DURATION_PATTERN = /^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$/;

/**
 * Duration is a metav1.Duration: a Go duration string such as `30s`, `1m30s`, `1.5h` or `300ms`.
 * The pattern is also put into the CRD (controller-gen only emits `type: string`) because a
 * value Go cannot parse would break every Go client decoding the object.
 */
export const Duration = v.pipe(
  v.string(),
  v.regex(GO_DURATION_PATTERN, "Invalid duration: expected a Go duration such as 30s, 1m30s, 1.5h or 300ms"),
);

/** StringMap is a map[string]string (labels, annotations, phase selectors). */
export const StringMap = v.record(v.string(), v.string());

/**
 * PreservedObject is a schemaless JSON object whose fields the apiserver keeps unvalidated
 * (`x-kubernetes-preserve-unknown-fields: true`): the Pod template and runtime config.
 */
export const PreservedObject = v.pipe(
  v.record(v.string(), v.unknown()),
  v.metadata({ "x-kubernetes-preserve-unknown-fields": true }),
);

/** atomicList is a list that is replaced as a whole on apply (`x-kubernetes-list-type: atomic`). */
export function atomicList<const TItem extends v.GenericSchema>(item: TItem) {
  return v.pipe(v.array(item), v.metadata({ "x-kubernetes-list-type": "atomic" }));
}

/**
 * listMap is a `+listType=map` list: items are identified by `key`, which must be unique (the
 * apiserver rejects duplicates; the runtime check repeats that and points at the duplicate item).
 * The key field must be required or defaulted in the item schema, as the apiserver demands.
 */
export function listMap<const TItem extends v.GenericSchema, const TKey extends string>(
  item: TItem,
  key: TKey,
) {
  return v.pipe(
    v.array(item),
    v.rawCheck<v.InferOutput<TItem>[]>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const seen = new Set<unknown>();
      dataset.value.forEach((entry, index) => {
        const value = (entry as Record<string, unknown>)[key];
        if (seen.has(value)) {
          addIssue({
            message: `Duplicate value: ${key} ${JSON.stringify(value)} appears more than once`,
            path: [{ type: "array", origin: "value", input: dataset.value, key: index, value: entry }],
          });
        }
        seen.add(value);
      });
    }),
    v.metadata({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [key] }),
  );
}

/**
 * REQUIRED_MARKER flags a field that the seed marks `+required` but that also has a default, so
 * valibot sees it as optional. The structural-schema conversion lists it under `required` and
 * removes the marker (the apiserver defaults before it validates, so the default still applies).
 */
export const REQUIRED_MARKER = "x-agentbox-required";

/** requiredWithDefault sets REQUIRED_MARKER on the schema of a defaulted, `+required` field. */
export function requiredWithDefault<const TSchema extends v.GenericSchema>(schema: TSchema) {
  return v.pipe(schema, v.metadata({ [REQUIRED_MARKER]: true }));
}
