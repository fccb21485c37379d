// What the console's Env page and `agentbox env get` show of an Env: each local member with its
// config, its pool's counts, its state (as the Env's last run observed it), the template revision
// its pool renders and whether that is behind the template; each autoscaling group with its
// bounds, policies and totals. Decided from one snapshot, no I/O.
import type { EnvClusterMemberConfig, SandboxEnv } from "../crd/sandbox-env.ts";
import { isSnapshotMember, localMembers, memberReplicas, scalingGroupOf } from "../membership/env-members.ts";
import { describeRevision, recordedRevision } from "./member-revision.ts";
import { viewMember } from "./member-view.ts";
import type { EnvSnapshot } from "./plan-env.ts";

/** MemberRow is one local member as shown. */
export interface MemberRow {
  name: string;
  /** template is what the member renders from: `<templateRef>[@version]`, or `spec snapshot`. */
  template: string;
  /** pool is "namespace/name" of the member's pool, undefined while it has none. */
  pool: string | undefined;
  /** state is the Env's last observation (Active, Saturated, Missing, Inconsistent), "–" before one. */
  state: string;
  /** replicas is the member's intent (spec.replicas, else config.minReplicas, else 0). */
  replicas: number;
  idle: number;
  running: number;
  /** revision names the template revision the pool records ("–" when it records none). */
  revision: string;
  /** behind says which revisions when the pool renders an older one than the template's (refresh it). */
  behind: string | undefined;
  scalingGroup: string;
  config: EnvClusterMemberConfig;
}

/** GroupRow is one autoscaling group as shown: its spec and its totals. */
export interface GroupRow {
  name: string;
  enabled: boolean;
  minReplicas: number | undefined;
  maxReplicas: number | undefined;
  scaleUpPolicy: Record<string, unknown>;
  scaleDownPolicy: Record<string, unknown>;
  members: string[];
  totals: { desired: number; idle: number; running: number };
}

/** EnvOverview is one Env as shown. */
export interface EnvOverview {
  key: string;
  templateRef: string;
  clusterId: string;
  members: MemberRow[];
  groups: GroupRow[];
  /** otherSegments counts the members of other clusters' segments (not edited here). */
  otherSegments: { clusterID: string; members: number }[];
  conditions: { type: string; status: string; reason: string; message: string }[];
}

const refOf = (env: SandboxEnv) =>
  `${env.spec.templateRef.name}${env.spec.templateRef.version ? `@${env.spec.templateRef.version}` : ""}`;

/** envOverview builds the overview of a snapshot's Env for its local segment (clusterId). */
export function envOverview(snapshot: EnvSnapshot, clusterId: string): EnvOverview {
  const { env, pools, template, pullSecret, catalog } = snapshot;
  const observed = new Map(
    (env.status?.clusters?.find((c) => c.clusterID === clusterId)?.observedMembers ?? []).map((m) => [
      m.name,
      m,
    ]),
  );
  const byName = new Map(pools.map((p) => [p.metadata?.name ?? "", p]));
  const inputs = { template, pullSecret, catalog: catalog ?? undefined };
  const members = localMembers(env, clusterId).map((member): MemberRow => {
    const pool = byName.get(member.name);
    const seen = observed.get(member.name);
    const recorded = pool ? recordedRevision(pool) : undefined;
    return {
      name: member.name,
      template: isSnapshotMember(member) ? "spec snapshot" : refOf(env),
      pool: pool ? `${pool.metadata?.namespace}/${pool.metadata?.name}` : undefined,
      state: seen?.state ?? "–",
      replicas: memberReplicas(member),
      idle: pool?.status?.idleReplicas ?? seen?.idleCount ?? 0,
      running: pool?.status?.runningReplicas ?? seen?.runningCount ?? 0,
      revision: recorded ? describeRevision(recorded) : "–",
      behind: viewMember(env, member, pool, inputs).behind,
      scalingGroup: scalingGroupOf(member),
      config: member.config ?? ({} as EnvClusterMemberConfig),
    };
  });
  const totals = new Map((env.status?.scalingGroups ?? []).map((g) => [g.name, g]));
  const groups = (env.spec.autoscaling?.groups ?? []).map(
    (g): GroupRow => ({
      name: g.name,
      enabled: g.enabled === true,
      minReplicas: g.minReplicas,
      maxReplicas: g.maxReplicas,
      scaleUpPolicy: { ...(g.scaleUpPolicy ?? {}) },
      scaleDownPolicy: { ...(g.scaleDownPolicy ?? {}) },
      members: members.filter((m) => m.scalingGroup === g.name).map((m) => m.name),
      totals: {
        desired: totals.get(g.name)?.totalDesired ?? 0,
        idle: totals.get(g.name)?.totalIdle ?? 0,
        running: totals.get(g.name)?.totalRunning ?? 0,
      },
    }),
  );
  return {
    key: `${env.metadata?.namespace}/${env.metadata?.name}`,
    templateRef: refOf(env),
    clusterId,
    members,
    groups,
    otherSegments: (env.spec.clusters ?? [])
      .filter((c) => c.clusterID !== clusterId)
      .map((c) => ({ clusterID: c.clusterID, members: c.members?.length ?? 0 })),
    conditions: (env.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason ?? "",
      message: c.message ?? "",
    })),
  };
}
