/** JsonPatchOp is one RFC 6902 operation, as every patch in this project is written. */
export type JsonPatchOp =
  | { op: "test"; path: string; value: unknown }
  | { op: "add"; path: string; value: unknown }
  | { op: "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** escapePointer escapes one JSON Pointer reference token (RFC 6901): label keys contain "/". */
export function escapePointer(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * mapOps turns a string map (labels, annotations) at `base` from `current` into one with `set`
 * applied and `remove` gone: removals only of keys that are there, additions and replacements
 * only of values that differ, and the whole map added when there is none yet. Empty when
 * nothing changes, so callers can tell "no write needed".
 */
export function mapOps(
  base: string,
  current: Readonly<Record<string, string>> | undefined,
  set: Readonly<Record<string, string>>,
  remove: readonly string[] = [],
): JsonPatchOp[] {
  const removals = remove.filter((k) => !(k in set) && current !== undefined && k in current);
  const sets = Object.entries(set).filter(([k, v]) => current?.[k] !== v);
  if (current === undefined)
    return sets.length === 0 ? [] : [{ op: "add", path: base, value: Object.fromEntries(sets) }];
  return [
    ...removals.map((k): JsonPatchOp => ({ op: "remove", path: `${base}/${escapePointer(k)}` })),
    ...sets.map(
      ([k, v]): JsonPatchOp => ({
        op: k in current ? "replace" : "add",
        path: `${base}/${escapePointer(k)}`,
        value: v,
      }),
    ),
  ];
}

/**
 * fieldOps turns the named fields of the object at `base` from `current` into `next`: a field
 * `next` lacks is removed (when `current` has it), one that differs is added (RFC 6902 `add`
 * replaces an existing member). Equal fields cost nothing.
 */
export function fieldOps(
  base: string,
  current: Readonly<Record<string, unknown>>,
  next: Readonly<Record<string, unknown>>,
  fields: readonly string[],
  equal: (a: unknown, b: unknown) => boolean,
): JsonPatchOp[] {
  return fields.flatMap((field): JsonPatchOp[] => {
    const path = `${base}/${escapePointer(field)}`;
    if (next[field] === undefined) return current[field] === undefined ? [] : [{ op: "remove", path }];
    return equal(current[field], next[field]) ? [] : [{ op: "add", path, value: next[field] }];
  });
}
