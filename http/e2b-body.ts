import type { Context } from "hono";
import { parseWith } from "../lib/crd/parse-with.ts";
import { issueText } from "../lib/e2b/requests.ts";
import { fail } from "./e2b-fail.ts";

/** readJson reads an optional JSON body: an empty body is undefined, a malformed one an error. */
async function readJson(c: Context): Promise<{ ok: true; value: unknown } | { ok: false }> {
  const text = await c.req.text();
  if (text.trim() === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * parseBody reads and validates an E2B request body, or answers E2B's 400 naming the first bad
 * field. Shared by the routers under /e2b (e2b.ts, e2b-pause.ts).
 */
export async function parseBody<T>(
  c: Context,
  schema: Parameters<typeof parseWith>[0],
): Promise<T | Response> {
  const body = await readJson(c);
  if (!body.ok) return fail(c, 400, "the body is not valid JSON");
  const parsed = parseWith(schema, body.value);
  if (parsed.ok) return parsed.value as T;
  return fail(c, 400, issueText(parsed.issues));
}
