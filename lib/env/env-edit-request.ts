// The edits an operator makes to an Env without kubectl (issue #26, section 3): add, remove or
// change a member of the local segment, set or remove an autoscaling group. One request shape
// for the console's forms and the CLI's flags, as valibot schemas, so bad input is a 400 naming
// the field (`config.maxReplicas: must be a whole number, at least 0`) before anything is written.
import * as v from "valibot";
import type { ApiIssue } from "../crd/parse-with.ts";
import { parseWith } from "../crd/parse-with.ts";

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const INT32_MAX = 2_147_483_647;

/** Count is a whole number in [min, 2^31-1]: replicas, bounds, seconds, multipliers. */
const Count = (min = 0) =>
  v.pipe(
    v.number(`must be a whole number, at least ${min}`),
    v.integer(`must be a whole number, at least ${min}`),
    v.minValue(min, `must be a whole number, at least ${min}`),
    v.maxValue(INT32_MAX, `must be at most ${INT32_MAX}`),
  );
const Priority = v.pipe(
  v.number("must be a whole number"),
  v.integer("must be a whole number"),
  v.minValue(-INT32_MAX - 1, "must fit in 32 bits"),
  v.maxValue(INT32_MAX, "must fit in 32 bits"),
);
const MemberName = v.pipe(
  v.string("must be a string"),
  v.regex(DNS_SUBDOMAIN, "must be a DNS subdomain (lowercase letters, digits, '-', '.'): it names a pool"),
);
const GroupName = v.pipe(
  v.string("must be a string"),
  v.regex(
    /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
    "must be a group name (letters, digits, '-', '_', '.')",
  ),
);
const InstanceTypeName = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));

const strict = <const T extends v.ObjectEntries>(entries: T) =>
  v.strictObject(entries, (issue) => (issue.expected === "never" ? "unknown field" : "required"));

/** MemberConfigFields are the member config fields an edit may set (null: remove it). */
const memberConfig = (nullable: boolean) => {
  const opt = <T extends v.GenericSchema>(s: T) => (nullable ? v.optional(v.nullable(s)) : v.optional(s));
  return strict({
    minReplicas: opt(Count()),
    maxReplicas: opt(Count()),
    instanceType: opt(InstanceTypeName),
    multiplier: opt(Count(1)),
    scalingGroup: v.optional(
      v.union([v.literal(""), GroupName], "must be a group name, or empty (no group)"),
    ),
    priority: opt(Priority),
    scaleUpPriority: opt(Priority),
    scaleDownPriority: opt(Priority),
  });
};

const ScaleUpPolicyEdit = strict({
  mode: v.optional(
    v.picklist(["Conservative", "Default", "Aggressive"], "must be Conservative, Default or Aggressive"),
  ),
  cooldownSeconds: v.optional(Count()),
  idleThresholdSeconds: v.optional(Count()),
  idleZeroQuietWindowSeconds: v.optional(Count()),
  saturationCooldownSeconds: v.optional(Count()),
});
const ScaleDownPolicyEdit = strict({
  idleTimeoutSeconds: v.optional(Count()),
  stabilizationSeconds: v.optional(Count()),
  protectionWindowSeconds: v.optional(Count()),
});

/**
 * EnvEdit is one edit of an Env: `add-member` (a new member of the local segment, with its
 * config and starting replicas), `remove-member`, `set-member` (config fields and replicas; null
 * removes a field), `set-group` (a group's switch, bounds and policy fields; the group is added
 * when missing), `remove-group`.
 */
export const EnvEdit = v.variant(
  "op",
  [
    strict({
      op: v.literal("add-member"),
      member: MemberName,
      replicas: v.optional(Count()),
      config: v.optional(memberConfig(false)),
    }),
    strict({ op: v.literal("remove-member"), member: MemberName }),
    strict({
      op: v.literal("set-member"),
      member: MemberName,
      replicas: v.optional(Count()),
      config: v.optional(memberConfig(true)),
    }),
    strict({
      op: v.literal("set-group"),
      group: GroupName,
      enabled: v.optional(v.boolean("must be true or false")),
      minReplicas: v.optional(Count()),
      maxReplicas: v.optional(v.nullable(Count())),
      scaleUpPolicy: v.optional(ScaleUpPolicyEdit),
      scaleDownPolicy: v.optional(ScaleDownPolicyEdit),
    }),
    strict({ op: v.literal("remove-group"), group: GroupName }),
  ],
  "must be one of add-member, remove-member, set-member, set-group, remove-group",
);
export type EnvEdit = v.InferOutput<typeof EnvEdit>;

/** EDIT_OPS are the edits there are, for usage texts. */
export const EDIT_OPS = ["add-member", "remove-member", "set-member", "set-group", "remove-group"] as const;

/** MEMBER_FIELDS are the flat field names of a member's config (the form's inputs, the CLI's flags). */
export const MEMBER_FIELDS = [
  "minReplicas",
  "maxReplicas",
  "instanceType",
  "multiplier",
  "scalingGroup",
  "priority",
  "scaleUpPriority",
  "scaleDownPriority",
] as const;
/** SCALE_UP_FIELDS and SCALE_DOWN_FIELDS are a group's policy fields, flat. */
export const SCALE_UP_FIELDS = [
  "mode",
  "cooldownSeconds",
  "idleThresholdSeconds",
  "idleZeroQuietWindowSeconds",
  "saturationCooldownSeconds",
] as const;
export const SCALE_DOWN_FIELDS = [
  "idleTimeoutSeconds",
  "stabilizationSeconds",
  "protectionWindowSeconds",
] as const;

/**
 * CLEAR is the flat value that removes a field (`--max-replicas none`, "none" in a form); for
 * scalingGroup it means no group ("").
 */
export const CLEAR = "none";

const STRING_FIELDS = new Set(["instanceType", "scalingGroup", "mode", "member", "group", "op"]);

/** typed turns a flat text value into what the schema expects: numbers, booleans, null for CLEAR. */
function typed(field: string, text: string): unknown {
  // A member outside every group has scalingGroup "" (removed, the CRD would default it to "default").
  if (text === CLEAR && field === "scalingGroup") return "";
  if (text === CLEAR && field !== "member" && field !== "group") return null;
  if (STRING_FIELDS.has(field)) return text;
  if (field === "enabled") return text === "true" ? true : text === "false" ? false : text;
  return /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text;
}

/**
 * editFromFields builds an EnvEdit from flat text fields (a console form, CLI flags): empty or
 * absent fields are left as they are, CLEAR removes one, numbers and booleans are read from text;
 * the result is parsed, so a bad value is an issue at its field path (`config.maxReplicas`).
 */
export function editFromFields(
  op: string,
  fields: Readonly<Record<string, string | undefined>>,
): { ok: true; value: EnvEdit } | { ok: false; issues: ApiIssue[] } {
  const given = Object.entries(fields).filter(
    (e): e is [string, string] => e[1] !== undefined && e[1] !== "",
  );
  const pick = (names: readonly string[]) =>
    Object.fromEntries(given.filter(([k]) => names.includes(k)).map(([k, text]) => [k, typed(k, text)]));
  const known = new Set<string>(["member", "group", "replicas", "enabled", "minReplicas", "maxReplicas"]);
  for (const f of [...MEMBER_FIELDS, ...SCALE_UP_FIELDS, ...SCALE_DOWN_FIELDS]) known.add(f);
  const unknown = given.filter(([k]) => !known.has(k)).map(([k]) => ({ path: k, message: "unknown field" }));
  if (unknown.length > 0) return { ok: false, issues: unknown };
  const nonEmpty = (o: Record<string, unknown>) => (Object.keys(o).length > 0 ? o : undefined);
  const top = pick(["member", "group", "replicas", "enabled"]);
  let edit: Record<string, unknown>;
  if (op === "set-group" || op === "remove-group") {
    const bounds = pick(["minReplicas", "maxReplicas"]);
    edit = {
      op,
      ...top,
      ...bounds,
      scaleUpPolicy: nonEmpty(pick(SCALE_UP_FIELDS)),
      scaleDownPolicy: nonEmpty(pick(SCALE_DOWN_FIELDS)),
    };
  } else {
    edit = { op, ...top, config: nonEmpty(pick(MEMBER_FIELDS)) };
  }
  const clean = Object.fromEntries(Object.entries(edit).filter(([, x]) => x !== undefined));
  return parseWith(EnvEdit, clean);
}
