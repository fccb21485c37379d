// The instance type catalog seed 002 assumes ("an entry in the cluster-wide InstanceType
// catalog"): a ConfigMap whose every data key is an instance type and whose value is a JSON
// object of its base resources (CPU, memory, optionally GPUs) and the multiplier range it allows.
// Parsed here, entry by entry, so one bad entry never hides the others (ADR 0032).
import * as v from "valibot";
import { issuePath } from "../crd/parse-with.ts";
import { parseQuantity } from "../lifecycle/quantity.ts";

/** ConfigMapRef names the catalog's ConfigMap. */
export interface ConfigMapRef {
  namespace: string;
  name: string;
}

/** DEFAULT_INSTANCE_TYPES is where the catalog lives unless the host says otherwise. */
export const DEFAULT_INSTANCE_TYPES: ConfigMapRef = {
  namespace: "agentbox-system",
  name: "agentbox-instance-types",
};

/** DEFAULT_GPU_RESOURCE is the extended resource a GPU count requests unless an entry names another. */
export const DEFAULT_GPU_RESOURCE = "nvidia.com/gpu";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * ConfigMapRefSetting reads a host setting "namespace/name" (AGENTBOX_INSTANCE_TYPES on the Node
 * host, INSTANCE_TYPES on the Worker) into a ConfigMapRef.
 */
export const ConfigMapRefSetting = v.pipe(
  v.string(),
  v.check((s) => {
    const [namespace = "", name = "", ...rest] = s.split("/");
    return rest.length === 0 && DNS_LABEL.test(namespace) && DNS_SUBDOMAIN.test(name);
  }, 'must be "namespace/name" of a ConfigMap, e.g. agentbox-system/agentbox-instance-types'),
  v.transform((s): ConfigMapRef => {
    const [namespace = "", name = ""] = s.split("/");
    return { namespace, name };
  }),
);

/** PositiveQuantity is a resource quantity above zero, as a string ("2", "500m", "4Gi"). */
const PositiveQuantity = v.pipe(
  v.union(
    [v.pipe(v.number(), v.integer(), v.transform(String)), v.string()],
    "must be a quantity such as 2, 500m or 4Gi",
  ),
  v.check((q) => {
    const parsed = parseQuantity(q);
    return parsed !== undefined && parsed.numerator > 0n;
  }, "must be a quantity above zero such as 2, 500m or 4Gi"),
);

const Count = (what: string) =>
  v.pipe(
    v.number(`must be a whole number (${what})`),
    v.integer(`must be a whole number (${what})`),
    v.minValue(1, `must be at least 1 (${what})`),
    v.maxValue(1024, `must be at most 1024 (${what})`),
  );

const strict = <const T extends v.ObjectEntries>(entries: T) =>
  v.strictObject(entries, (issue) =>
    issue.expected === "never"
      ? "unknown field"
      : issue.expected === "Object"
        ? "must be an object"
        : "required",
  );

/** Entry is one catalog value as written (JSON), with its defaults applied. */
const Entry = v.pipe(
  strict({
    cpu: PositiveQuantity,
    memory: PositiveQuantity,
    gpu: v.optional(
      strict({
        count: Count("GPUs per Pod at multiplier 1"),
        type: v.pipe(v.string("must be a string"), v.minLength(1, "must name the GPU model")),
        resourceName: v.optional(
          v.pipe(
            v.string("must be a string"),
            v.regex(RESOURCE_NAME, "must be an extended resource name such as nvidia.com/gpu"),
          ),
          DEFAULT_GPU_RESOURCE,
        ),
      }),
    ),
    multiplier: v.optional(
      strict({
        min: v.optional(Count("the smallest multiplier")),
        max: v.optional(Count("the largest multiplier")),
      }),
      {},
    ),
    description: v.optional(v.string("must be a string")),
  }),
  v.transform((e) => {
    const min = e.multiplier.min ?? 1;
    return { ...e, multiplier: { min, max: e.multiplier.max ?? min } };
  }),
  v.check((e) => e.multiplier.max >= e.multiplier.min, "multiplier.max: must not be below multiplier.min"),
);

/** InstanceType is one catalog entry: base resources per Pod at multiplier 1, and its range. */
export interface InstanceType {
  name: string;
  cpu: string;
  memory: string;
  gpu?: { count: number; type: string; resourceName: string };
  /** multiplier is the declared [min, max] a member's multiplier must fall in (seed 002). */
  multiplier: { min: number; max: number };
  description?: string;
}

/** InstanceTypeCatalog is the parsed catalog: its valid types, and why the others are not. */
export interface InstanceTypeCatalog {
  /** source names the ConfigMap, "namespace/name", for messages. */
  source: string;
  types: ReadonlyMap<string, InstanceType>;
  /** invalid holds, per key that is not a valid entry, what is wrong with it ("field: reason"). */
  invalid: ReadonlyMap<string, string[]>;
}

/** parseEntry reads one catalog value: its type, or what is wrong with it ("field: reason"). */
function parseEntry(name: string, text: string): InstanceType | string[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return [`is not JSON (${e instanceof Error ? e.message : String(e)})`];
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    return ['must be a JSON object such as {"cpu": "2", "memory": "4Gi"}'];
  const parsed = v.safeParse(Entry, json);
  if (!parsed.success)
    return parsed.issues.map((i) => {
      const path = issuePath(i);
      return path ? `${path}: ${i.message}` : i.message;
    });
  const { cpu, memory, gpu, multiplier, description } = parsed.output;
  return {
    name,
    cpu,
    memory,
    ...(gpu ? { gpu } : {}),
    multiplier,
    ...(description !== undefined ? { description } : {}),
  };
}

/**
 * parseInstanceTypeCatalog reads a catalog ConfigMap's data (`source` is "namespace/name"): each
 * key is an instance type, each value a JSON object
 * `{"cpu": "2", "memory": "4Gi", "gpu": {"count": 1, "type": "nvidia-a100", "resourceName":
 * "nvidia.com/gpu"}, "multiplier": {"min": 1, "max": 8}, "description": "…"}` (gpu, multiplier and
 * description optional; resourceName defaults to nvidia.com/gpu, multiplier to {min: 1, max: min}).
 * An invalid value is listed in `invalid` with every reason, naming its fields; the others stay
 * usable. Pure: never throws.
 */
export function parseInstanceTypeCatalog(
  source: string,
  data: Readonly<Record<string, string>> | undefined,
): InstanceTypeCatalog {
  const types = new Map<string, InstanceType>();
  const invalid = new Map<string, string[]>();
  for (const [key, text] of Object.entries(data ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const entry = parseEntry(key, text);
    if (Array.isArray(entry)) invalid.set(key, entry);
    else types.set(key, entry);
  }
  return { source, types, invalid };
}

/** catalogProblems lists every invalid entry as `entry "key": field: reason`, for logs. */
export function catalogProblems(catalog: InstanceTypeCatalog): string[] {
  return [...catalog.invalid].flatMap(([key, reasons]) => reasons.map((r) => `entry "${key}": ${r}`));
}
