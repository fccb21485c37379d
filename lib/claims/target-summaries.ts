import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";

/** PoolSummary is one pool as GET /v1/pools lists it: where to claim, and how full it is. */
export interface PoolSummary {
  pool: string;
  phase: string;
  template?: string;
  desired: number;
  idle: number;
  starting: number;
  running: number;
  stopping: number;
  failed: number;
}

/** poolSummary reads a pool's summary from its spec and status. */
export function poolSummary(p: SandboxPool): PoolSummary {
  const s = p.status;
  return {
    pool: `${p.metadata?.namespace}/${p.metadata?.name}`,
    phase: s?.phase ?? "",
    ...(p.spec.templateName ? { template: p.spec.templateName } : {}),
    desired: p.spec.replicas ?? 0,
    idle: s?.idleReplicas ?? 0,
    starting: s?.startingReplicas ?? 0,
    running: s?.runningReplicas ?? 0,
    stopping: s?.stoppingReplicas ?? 0,
    failed: s?.failedReplicas ?? 0,
  };
}

/** EnvSummary is one Env as GET /v1/envs lists it, with its members' states. */
export interface EnvSummary {
  env: string;
  template: string;
  desired: number;
  idle: number;
  running: number;
  members: { name: string; state: string; idle: number; running: number; desired: number }[];
}

/** envSummary reads an Env's summary from its status (every cluster segment's members). */
export function envSummary(e: SandboxEnv): EnvSummary {
  const s = e.status;
  return {
    env: `${e.metadata?.namespace}/${e.metadata?.name}`,
    template: e.spec.templateRef.name,
    desired: s?.desiredReplicas ?? 0,
    idle: s?.idleReplicas ?? 0,
    running: s?.runningReplicas ?? 0,
    members: (s?.clusters ?? []).flatMap((c) =>
      (c.observedMembers ?? []).map((m) => ({
        name: m.name,
        state: m.state ?? "",
        idle: m.idleCount ?? 0,
        running: m.runningCount ?? 0,
        desired: m.desiredReplicas ?? 0,
      })),
    ),
  };
}
