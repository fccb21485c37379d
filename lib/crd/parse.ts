// Runtime validation of agents.navix.sh objects for the admission webhooks and the REST API:
// parse applies the CRD defaults and drops unknown fields (as the apiserver's pruning does),
// or reports every problem with a field path users recognise, e.g. `spec.runtimes[0].port`.
import { type ParseResult, parseWith } from "./parse-with.ts";
import { SandboxEnv, SandboxEnvSpec } from "./sandbox-env.ts";
import { SandboxPool, SandboxPoolSpec } from "./sandbox-pool.ts";
import { SandboxTemplate, SandboxTemplateSpec } from "./sandbox-template.ts";

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
