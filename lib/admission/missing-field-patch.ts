import type { JsonPatchOp } from "../kube/json-patch.ts";
import { escapePointer } from "../kube/json-patch.ts";

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * missingFieldPatch lists `add` operations for every field present in defaulted but absent in
 * input, recursing through objects and same-length arrays. Values the input has are never
 * touched, so the patch can only fill in defaults.
 */
export function missingFieldPatch(input: unknown, defaulted: unknown, path = ""): JsonPatchOp[] {
  if (isRecord(input) && isRecord(defaulted)) {
    return Object.entries(defaulted).flatMap(([key, value]) => {
      const at = `${path}/${escapePointer(key)}`;
      if (!(key in input) || input[key] === undefined)
        return value === undefined ? [] : [{ op: "add" as const, path: at, value }];
      return missingFieldPatch(input[key], value, at);
    });
  }
  if (Array.isArray(input) && Array.isArray(defaulted) && input.length === defaulted.length) {
    return defaulted.flatMap((value, i) => missingFieldPatch(input[i], value, `${path}/${i}`));
  }
  return [];
}
