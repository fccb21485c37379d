// Where a create looks for an idle pod, and where it waits when there is none: the routing
// decision of a create (functions/api/create-sandbox.ts acts on it), pure so its order is tested
// with plain data.
import type { EnvClusterMember, SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { routeEnv } from "./env-route.ts";

/** ClaimTarget is a resolved create target: a pool (maybe an Env's member), or an Env's pools. */
export type ClaimTarget =
  | { pool: SandboxPool; memberOf?: SandboxEnv }
  | { env: SandboxEnv; pools: SandboxPool[] };

/** ClaimPlan is where a create looks for an idle pod, and where it waits when there is none. */
export interface ClaimPlan {
  /** where names the target in errors ("namespace/pool", or "env namespace/name"). */
  where: string;
  /** tryNow are the pools to claim from at once, in order. */
  tryNow: SandboxPool[];
  /** watch are the pools a waiting create watches; grow is where it registers its demand. */
  watch: SandboxPool[];
  grow: SandboxPool | undefined;
  /**
   * env is the Env the pools are members of (an Env target's, or a member pool's), undefined for
   * a standalone pool: its group's scale-down policy says how long a marked pod may be claimed.
   */
  env: SandboxEnv | undefined;
}

/**
 * planClaims turns a resolved target into a ClaimPlan: a pool is tried and watched alone; an Env's
 * members are ordered by routeEnv, those with idle pods tried (or, when the counts say none has
 * any, the one a wait would grow, once; a member at its maxReplicas is not tried on a guess), and
 * every member watched, at-max ones included (their releases serve waiting creates too). `accept`
 * keeps the members of the instance shape the create asks for (envShapeDecision).
 */
export function planClaims(
  target: ClaimTarget,
  clusterId: string,
  now: Date,
  accept?: (member: EnvClusterMember) => boolean,
): ClaimPlan {
  if ("pool" in target) {
    const { namespace, name } = target.pool.metadata ?? {};
    return {
      where: `${namespace}/${name}`,
      tryNow: [target.pool],
      watch: [target.pool],
      grow: target.pool,
      env: target.memberOf,
    };
  }
  const route = routeEnv(target.env, target.pools, clusterId, now, accept);
  const members = route.members.map((m) => m.pool);
  const withIdle = route.members.filter((m) => m.idle > 0).map((m) => m.pool);
  const fallback = route.grow?.pool ?? route.members.find((m) => !m.atMax)?.pool;
  return {
    where: `env ${target.env.metadata?.namespace}/${target.env.metadata?.name}`,
    tryNow: withIdle.length > 0 ? withIdle : fallback ? [fallback] : [],
    watch: members,
    grow: route.grow?.pool,
    env: target.env,
  };
}
