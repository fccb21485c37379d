// Which member of an Env a create is served from (seed: EnvScheduler): members with an idle Pod
// first, then the lower routing priority; saturated members held back and tried only when no
// fresh member can serve; a member at its maxReplicas with no idle Pod skipped. Decided from the
// Env and its pools as read (possibly from the watch cache): claims are preconditioned, so a
// stale count costs a retry, never a wrong claim.

import { byScaleUpOrder, type MemberKey } from "../autoscale/policies.ts";
import type { EnvClusterMember, SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { saturatedUntil } from "../env/saturation.ts";
import { isTerminating } from "../kube/action.ts";
import { localMembers, scalingGroupOf } from "../membership/env-members.ts";
import { foreignMemberPool } from "../membership/env-ownership.ts";

/** RoutedMember is one member pool a create may be served from. */
export interface RoutedMember extends MemberKey {
  pool: SandboxPool;
  /** idle is the pool's available idle Pods as its status last said. */
  idle: number;
  saturated: boolean;
  /** atMax: the member is at its maxReplicas (it cannot grow). */
  atMax: boolean;
  /** autoscaled: the member is in an enabled autoscaling group (the autoscaler reads its demand). */
  autoscaled: boolean;
}

/** EnvRoute is the order to try members in, and the member a waiting create asks to grow. */
export interface EnvRoute {
  /** members in order: fresh ones, then saturated ones (the fallback); at-max ones only watched. */
  members: RoutedMember[];
  /** grow is where a create that must wait registers its demand (undefined: no member can grow). */
  grow: RoutedMember | undefined;
}

function routingPriority(m: MemberKey): number {
  return m.config?.priority ?? 0;
}

/** byRoutingOrder: members with an idle Pod first, then lower priority, then cluster and name. */
function byRoutingOrder(a: RoutedMember, b: RoutedMember): number {
  return (
    Number(b.idle > 0) - Number(a.idle > 0) ||
    routingPriority(a) - routingPriority(b) ||
    (a.clusterId < b.clusterId ? -1 : a.clusterId > b.clusterId ? 1 : 0) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
}

/**
 * routeEnv orders the Env's local members for one create. Only pools that serve the Env count (its
 * own, on its template: foreignMemberPool); a member whose pool is missing or being deleted is left
 * out. Every member stays in `members` (a waiting create watches them all: a release anywhere
 * serves it), but one at its maxReplicas with no idle Pod is not tried and never grown. A waiting
 * create grows the first member the autoscaler reads (an enabled group's), fresh before
 * saturated, by scale-up order; else any member that can grow. `accept`, when given, keeps only
 * the members that may serve this create (those of the instance shape it asks for).
 */
export function routeEnv(
  env: SandboxEnv,
  pools: readonly SandboxPool[],
  clusterId: string,
  now: Date,
  accept?: (member: EnvClusterMember) => boolean,
): EnvRoute {
  const byName = new Map(
    pools
      .filter((p) => p.metadata?.namespace === env.metadata?.namespace)
      .map((p) => [p.metadata?.name ?? "", p]),
  );
  const groups = new Map((env.spec.autoscaling?.groups ?? []).map((g) => [g.name, g]));
  const routed = localMembers(env, clusterId).flatMap((member): RoutedMember[] => {
    if (accept && !accept(member)) return [];
    const pool = byName.get(member.name);
    if (!pool || isTerminating(pool) || foreignMemberPool(pool, env)) return [];
    const group = groups.get(scalingGroupOf(member));
    const cooldown = group?.scaleUpPolicy?.saturationCooldownSeconds ?? 60;
    const until = saturatedUntil(pool, cooldown);
    const max = member.config?.maxReplicas;
    const idle = Math.max(0, (pool.status?.idleReplicas ?? 0) - (pool.status?.unavailableIdleReplicas ?? 0));
    return [
      {
        name: member.name,
        clusterId,
        config: member.config,
        pool,
        idle,
        saturated: until !== undefined && until > now,
        atMax: max !== undefined && pool.spec.replicas >= max,
        autoscaled: group?.enabled === true,
      },
    ];
  });
  const fresh = routed.filter((m) => !m.saturated).sort(byRoutingOrder);
  const held = routed.filter((m) => m.saturated).sort(byRoutingOrder);
  const growOrder = (a: RoutedMember, b: RoutedMember) =>
    Number(b.autoscaled) - Number(a.autoscaled) ||
    Number(a.saturated) - Number(b.saturated) ||
    byScaleUpOrder(a, b);
  const grow = routed.filter((m) => !m.atMax).sort(growOrder)[0];
  return { members: [...fresh, ...held], grow };
}
