// An Env's members as the local cluster sees them: only the segment whose clusterID is ours is
// ever materialised or written (foreign segments belong to other clusters' control planes).
import type { EnvClusterMember, SandboxEnv } from "../api/sandbox-env.ts";
import type { SandboxPool } from "../api/sandbox-pool.ts";
import { ownedBy } from "./ownership.ts";

export type { EnvClusterMember } from "../api/sandbox-env.ts";

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

/**
 * poolsOfEnv picks, from the pools of the Env's namespace, the ones its run decides about: those
 * it owns (members, and former members to delete) and those carrying a local member's name (to
 * create, adopt, or report as held by another owner).
 */
export function poolsOfEnv(env: SandboxEnv, pools: readonly SandboxPool[], clusterId: string): SandboxPool[] {
  const names = new Set(localMembers(env, clusterId).map((m) => m.name));
  const ns = env.metadata?.namespace;
  return pools.filter(
    (p) => p.metadata?.namespace === ns && (ownedBy(p, env) || names.has(p.metadata?.name ?? "")),
  );
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
