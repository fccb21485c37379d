// The pool gauges' vocabulary, apart from prom-client so the Worker (which cannot load it) shares it.

/** POOL_PHASES are the pool gauges' phases: agentbox_sandboxpool_replicas_<phase>. */
export const POOL_PHASES = ["desired", "idle", "running", "starting", "stopping", "failed"] as const;
export type PoolPhase = (typeof POOL_PHASES)[number];

/** PoolLabels name a pool's series: its namespace, name and Env (empty for a standalone pool). */
export interface PoolLabels {
  namespace: string;
  pool: string;
  sandbox_env: string;
}
