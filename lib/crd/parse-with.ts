// Validation results in the API's own terms: a valibot schema's issues become field paths users
// recognise (`spec.runtimes[0].port`). Kept apart from the CRD schemas (parse.ts) so a module that
// checks one annotation does not load every schema of the API.
import * as v from "valibot";

/** ApiIssue is one validation problem: a Kubernetes-style field path and a message. */
export interface ApiIssue {
  /** path is like `spec.clusters[0].members[1].config.multiplier`; "" for the whole object. */
  path: string;
  message: string;
}

/** ParseResult is either the typed, defaulted object or the list of issues. */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: ApiIssue[] };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * issuePath renders a valibot issue path the way the apiserver prints field paths: `.name` for
 * fields and identifier-like map keys (`limits.cpu`), `[i]` for list items, and `[key]` for any
 * other map key, so a label key such as `agentbox.navix.sh/env` stays readable.
 */
export function issuePath(issue: v.BaseIssue<unknown>): string {
  let out = "";
  for (const item of issue.path ?? []) {
    const key = item.key;
    if (typeof key === "string" && IDENTIFIER.test(key)) out += out === "" ? key : `.${key}`;
    else out += `[${String(key)}]`;
  }
  return out;
}

/** parseWith validates input against any schema of this API and returns a ParseResult. */
export function parseWith<const TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
): ParseResult<v.InferOutput<TSchema>> {
  const result = v.safeParse(schema, input);
  if (result.success) return { ok: true, value: result.output };
  return {
    ok: false,
    issues: result.issues.map((issue) => ({ path: issuePath(issue), message: issue.message })),
  };
}
