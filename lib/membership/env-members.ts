// An Env's members as the local cluster sees them: only the segment whose clusterID is ours is
// ever materialised or written (foreign segments belong to other clusters' control planes).
import type { EnvClusterMember, SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { ownedBy } from "./env-ownership.ts";

export type { EnvClusterMember } from "../crd/sandbox-env.ts";

/** localMembers lists the members of the Env's segment for clusterId ([] when there is none). */
export function localMembers(env: SandboxEnv, clusterId: string): EnvClusterMember[] {
  return env.spec.clusters?.find((c) => c.clusterID === clusterId)?.members ?? [];
}

/**
 * isSnapshotMember: the member carries a full pool spec snapshot (one with a pod template), which
 * is stamped verbatim. A member spec without one only says how many replicas the member wants
 * (the autoscaler writes just that), and the pool is rendered from the Env's template.
 */
export function isSnapshotMember(member: EnvClusterMember): boolean {
  return member.spec?.template !== undefined;
}

/**
 * memberReplicas is the member's replica intent: its spec.replicas, where the autoscaler and the
 * user write it; a member without a spec starts at its config.minReplicas (0 when unset).
 */
export function memberReplicas(member: EnvClusterMember): number {
  return member.spec?.replicas ?? member.config?.minReplicas ?? 0;
}

/**
 * scalingGroupOf is the member's autoscaling group, "" when it is excluded. The CRD defaults
 * config.scalingGroup to "default" when a config is given; a member without any config has none.
 */
export function scalingGroupOf(member: EnvClusterMember): string {
  return member.config?.scalingGroup ?? "";
}

/** PoolIndex finds pools by "namespace/name" and by the uid of the Env that owns them. */
export interface PoolIndex {
  byKey: ReadonlyMap<string, SandboxPool>;
  byOwner: ReadonlyMap<string, readonly SandboxPool[]>;
}

/** indexPools indexes pools once, so a tick over many Envs finds each Env's pools in constant time. */
export function indexPools(pools: readonly SandboxPool[]): PoolIndex {
  const byKey = new Map<string, SandboxPool>();
  const byOwner = new Map<string, SandboxPool[]>();
  for (const pool of pools) {
    byKey.set(`${pool.metadata?.namespace}/${pool.metadata?.name}`, pool);
    for (const ref of pool.metadata?.ownerReferences ?? []) {
      if (ref.kind !== "SandboxEnv") continue;
      const owned = byOwner.get(ref.uid) ?? [];
      owned.push(pool);
      byOwner.set(ref.uid, owned);
    }
  }
  return { byKey, byOwner };
}

/**
 * poolsOfEnv picks the pools an Env's run decides about: those it owns (members, and former members
 * to delete) and those carrying a local member's name in its namespace (to create, adopt, or report
 * as held by another owner).
 */
export function poolsOfEnv(env: SandboxEnv, index: PoolIndex, clusterId: string): SandboxPool[] {
  const ns = env.metadata?.namespace;
  const out = new Set((index.byOwner.get(env.metadata?.uid ?? "") ?? []).filter((p) => ownedBy(p, env)));
  for (const m of localMembers(env, clusterId)) {
    const pool = index.byKey.get(`${ns}/${m.name}`);
    if (pool) out.add(pool);
  }
  return [...out];
}

/** envsNamingPools lists the Envs (keys "namespace/name") with a local member named like a written pool. */
export function envsNamingPools(
  envs: readonly SandboxEnv[],
  pools: readonly { namespace: string; name: string }[],
  clusterId: string,
): string[] {
  const written = new Set(pools.map((p) => `${p.namespace}/${p.name}`));
  return envs
    .filter((env) =>
      localMembers(env, clusterId).some((m) => written.has(`${env.metadata?.namespace}/${m.name}`)),
    )
    .map((env) => `${env.metadata?.namespace}/${env.metadata?.name}`);
}

/** envsUsingTemplates lists the Envs (keys "namespace/name") whose templateRef names a written template. */
export function envsUsingTemplates(envs: readonly SandboxEnv[], templates: readonly string[]): string[] {
  const written = new Set(templates);
  return envs
    .filter((env) => written.has(env.spec.templateRef.name))
    .map((env) => `${env.metadata?.namespace}/${env.metadata?.name}`);
}
