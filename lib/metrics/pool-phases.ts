// The pool gauges' vocabulary, apart from prom-client so the Worker (which cannot load it) shares it.

/**
 * POOL_PHASES are the pool gauges' phases: agentbox_sandboxpool_replicas_<phase>; besides the
 * sandbox phases, `desired` (spec.replicas) and `outdated` (pods of an older pod revision, which
 * a rollout replaces: ADR 0031).
 */
export const POOL_PHASES = [
  "desired",
  "idle",
  "running",
  "starting",
  "stopping",
  "failed",
  "outdated",
] as const;
export type PoolPhase = (typeof POOL_PHASES)[number];

/** PoolLabels name a pool's series: its namespace, name and Env (empty for a standalone pool). */
export interface PoolLabels {
  namespace: string;
  pool: string;
  sandbox_env: string;
}

/** poolGaugeHelp is a pool gauge's HELP text, `counted` saying where its counts come from. */
export function poolGaugeHelp(phase: PoolPhase, counted: string): string {
  if (phase === "desired") return "Pods the pool asks for (spec.replicas).";
  if (phase === "outdated")
    return `Pods of the pool at an older pod revision (a rollout replaces them), ${counted}.`;
  return `Pods of the pool in phase ${phase}, ${counted}.`;
}
