// Runtime validation of agents.navix.sh objects for the admission webhooks and the REST API:
// parse applies the CRD defaults and drops unknown fields (as the apiserver's pruning does),
// or reports every problem with a field path users recognise, e.g. `spec.runtimes[0].port`.
import * as v from "valibot";
import { SandboxEnv, SandboxEnvSpec } from "./sandbox-env.ts";
import { SandboxPool, SandboxPoolSpec } from "./sandbox-pool.ts";
import { SandboxTemplate, SandboxTemplateSpec } from "./sandbox-template.ts";

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

/** parseSandboxTemplate validates and defaults a whole SandboxTemplate object. */
export function parseSandboxTemplate(input: unknown): ParseResult<SandboxTemplate> {
  return parseWith(SandboxTemplate, input);
}

/** parseSandboxPool validates and defaults a whole SandboxPool object. */
export function parseSandboxPool(input: unknown): ParseResult<SandboxPool> {
  return parseWith(SandboxPool, input);
}

/** parseSandboxEnv validates and defaults a whole SandboxEnv object. */
export function parseSandboxEnv(input: unknown): ParseResult<SandboxEnv> {
  return parseWith(SandboxEnv, input);
}

/** parseSandboxTemplateSpec validates a template spec alone (paths start below `spec`). */
export function parseSandboxTemplateSpec(input: unknown): ParseResult<SandboxTemplateSpec> {
  return parseWith(SandboxTemplateSpec, input);
}

/** parseSandboxPoolSpec validates a pool spec alone (paths start below `spec`). */
export function parseSandboxPoolSpec(input: unknown): ParseResult<SandboxPoolSpec> {
  return parseWith(SandboxPoolSpec, input);
}

/** parseSandboxEnvSpec validates an Env spec alone (paths start below `spec`). */
export function parseSandboxEnvSpec(input: unknown): ParseResult<SandboxEnvSpec> {
  return parseWith(SandboxEnvSpec, input);
}
