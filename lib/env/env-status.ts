// The status of an Env, computed from the Env, its member pools as read and their renders. The
// local cluster segment is rebuilt each run; foreign segments (a hub's) are carried over as read.
// Recomputing from the same state gives the same status, so a run at rest writes nothing.
import type { V1ResourceRequirements } from "@kubernetes/client-node";
import { POOL_TEMPLATE_VERSION_ANNOTATION } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { EnvObservedMember, ObservedMemberState, SandboxEnvStatus } from "../crd/sandbox-env-status.ts";
import { scalingGroupOf } from "../membership/env-members.ts";
import { foreignMemberPool, ownedBy } from "../membership/env-ownership.ts";
import { type ConditionCore, setConditions } from "../util/conditions.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { rfc3339 } from "../util/time.ts";
import type { GroupStall } from "./autoscaling-stall.ts";
import { envConditions } from "./env-conditions.ts";
import type { MemberReport, MemberView } from "./member-report.ts";
import { saturatedUntil } from "./saturation.ts";

/**
 * firstContainerResources reads the first container's resources from a pod template, which the
 * CRD keeps unvalidated: quantities written as JSON numbers (`cpu: 0.5`, valid in a Pod) become
 * strings, as the Env status schema wants them, and anything else is left out.
 */
export function firstContainerResources(
  spec: { template?: Record<string, unknown> | undefined } | undefined,
) {
  const podSpec = spec?.template?.spec as { containers?: { resources?: unknown }[] } | undefined;
  const raw = podSpec?.containers?.[0]?.resources;
  if (typeof raw !== "object" || raw === null) return undefined;
  const out: Record<string, Record<string, string>> = {};
  for (const part of ["limits", "requests"] as const) {
    const quantities = (raw as Record<string, unknown>)[part];
    if (typeof quantities !== "object" || quantities === null) continue;
    const kept = Object.entries(quantities).filter(
      (e): e is [string, string | number] => typeof e[1] === "string" || typeof e[1] === "number",
    );
    if (kept.length) out[part] = Object.fromEntries(kept.map(([k, q]) => [k, String(q)]));
  }
  return Object.keys(out).length ? (out as V1ResourceRequirements) : undefined;
}

/**
 * memberState classifies a member: Missing (no pool, or it is going away), Inconsistent (a pool
 * of its name not owned by this Env, one using another template or version than the Env expects,
 * or an instance type the catalog does not resolve), Saturated (in its saturation cooldown, or at its maxReplicas) or Active.
 */
function memberState(env: SandboxEnv, view: MemberView, until: Date | undefined, now: Date) {
  const { pool, member, rendered } = view;
  const state = (s: ObservedMemberState, why?: string) => ({ state: s, ...(why ? { why } : {}) });
  if (!pool) return state("Missing", rendered.problem ?? "its pool is not created yet");
  if (pool.metadata?.deletionTimestamp) return state("Missing", "its pool is being deleted");
  const foreign = foreignMemberPool(pool, env);
  if (foreign) return state("Inconsistent", foreign);
  const ref = env.spec.templateRef;
  const version = pool.metadata?.annotations?.[POOL_TEMPLATE_VERSION_ANNOTATION];
  if (ref.version && version !== ref.version)
    return state("Inconsistent", `its pool has template version "${version ?? ""}", not "${ref.version}"`);
  if (rendered.sizingProblem) return state("Inconsistent", rendered.sizingProblem);
  if (until && until > now) return state("Saturated", `saturated until ${rfc3339(until)}`);
  const max = member.config?.maxReplicas;
  if (max !== undefined && pool.spec.replicas >= max)
    return state("Saturated", `at its maxReplicas (${max})`);
  return state("Active");
}

/** observeMember is one member's observed state, mirrored from its pool's spec and status. */
export function observeMember(env: SandboxEnv, view: MemberView, now: Date): MemberReport {
  const { member, pool, rendered } = view;
  const config = member.config;
  const group = env.spec.autoscaling?.groups?.find((g) => g.name === scalingGroupOf(member));
  const until = pool ? saturatedUntil(pool, group?.scaleUpPolicy.saturationCooldownSeconds ?? 60) : undefined;
  const { state, why } = memberState(env, view, until, now);
  // InstanceType × Multiplier when the catalog resolves the member's type (it wins over inline ones).
  const resources =
    rendered.resources ??
    config?.inlineResources ??
    firstContainerResources(rendered.spec) ??
    firstContainerResources(pool?.spec);
  const owned = pool && ownedBy(pool, env) ? pool : undefined;
  const observed: EnvObservedMember = {
    name: member.name,
    ...(config?.instanceType ? { instanceType: config.instanceType } : {}),
    ...(config?.multiplier ? { multiplier: config.multiplier } : {}),
    ...(resources ? { effectiveResources: resources } : {}),
    state,
    idleCount: owned?.status?.idleReplicas ?? 0,
    runningCount: owned?.status?.runningReplicas ?? 0,
    desiredReplicas: rendered.spec.replicas,
    currentReplicas: owned?.spec.replicas ?? 0,
    pendingRequests: owned?.status?.pendingRequests ?? 0,
    ...(until && until > now ? { saturatedUntil: rfc3339(until) } : {}),
  };
  return { observed, ...(why ? { why } : {}), ...(view.behind ? { behind: view.behind } : {}) };
}

/** sum adds up one counter over observed members. */
function sum(members: readonly EnvObservedMember[], key: "idleCount" | "runningCount" | "desiredReplicas") {
  return members.reduce((total, m) => total + (m[key] ?? 0), 0);
}

/**
 * computeEnvStatus is the status the Env should have: its local segment (isLocal, the observed
 * members, lastSnapshotTime), foreign segments as read, per-scaling-group totals over every
 * observed member whose spec names a group, the member count and the desired/running/idle
 * rollups over every segment, and the Ready, TemplateConsistent and AutoscalingActive conditions
 * (`stalls`: the enabled groups that have stalled, see autoscalingStalls). lastSnapshotTime moves to `now` only when something else in the status changed, so an Env at
 * rest is never rewritten.
 */
export function computeEnvStatus(
  env: SandboxEnv,
  clusterId: string,
  views: readonly MemberView[],
  templateFound: boolean,
  now: Date,
  stalls: readonly GroupStall[] = [],
): SandboxEnvStatus {
  const previous = env.status ?? {};
  const reports = views.map((view) => observeMember(env, view, now));
  const local = reports.map((r) => r.observed);
  const prevLocal = previous.clusters?.find((c) => c.clusterID === clusterId);
  const foreign = (previous.clusters ?? []).filter((c) => c.clusterID !== clusterId);
  const segment = {
    clusterID: clusterId,
    isLocal: true,
    observedMembers: local,
    ...(prevLocal?.lastSnapshotTime ? { lastSnapshotTime: prevLocal.lastSnapshotTime } : {}),
  };
  const everyone = [...local, ...foreign.flatMap((c) => c.observedMembers ?? [])];
  const groupOf = new Map(
    (env.spec.clusters ?? []).flatMap((c) =>
      (c.members ?? []).map((m) => [m.name, scalingGroupOf(m)] as const),
    ),
  );
  const groups = [...new Set(everyone.map((m) => groupOf.get(m.name) ?? "").filter((g) => g !== ""))].sort();
  const computed: ConditionCore[] = envConditions(env, reports, templateFound, stalls);
  const status: SandboxEnvStatus = {
    conditions: setConditions(previous.conditions ?? [], computed, now, env.metadata?.generation),
    clusters: [...foreign, segment].sort((a, b) => (a.clusterID < b.clusterID ? -1 : 1)),
    scalingGroups: groups.map((name) => {
      const members = everyone.filter((m) => groupOf.get(m.name) === name);
      return {
        name,
        totalIdle: sum(members, "idleCount"),
        totalRunning: sum(members, "runningCount"),
        totalDesired: sum(members, "desiredReplicas"),
      };
    }),
    memberCount: everyone.length,
    desiredReplicas: sum(everyone, "desiredReplicas"),
    runningReplicas: sum(everyone, "runningCount"),
    idleReplicas: sum(everyone, "idleCount"),
  };
  if (jsonEqual(previous, status)) return status;
  return {
    ...status,
    clusters: (status.clusters ?? []).map((c) =>
      c.clusterID === clusterId ? { ...c, lastSnapshotTime: rfc3339(now) } : c,
    ),
  };
}
