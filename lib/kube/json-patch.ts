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
