// When an enabled autoscaling group has stalled: the autoscaler runs for it but can make no
// progress, so the Env's AutoscalingActive condition is False with the reason (seed 002,
// SandboxEnvConditionAutoscalingActive: "indicates the autoscaler is configured, enabled, and has
// not stalled due to misconfiguration"). Pure: decided from the Env's member views, their pods and
// `now`, as the autoscaler sees them (loadMember), so a status computed twice says the same.
import type { V1Pod } from "@kubernetes/client-node";
import { loadMember, type MemberLoad } from "../autoscale/member-load.ts";
import { groupPolicies } from "../autoscale/policies.ts";
import type { EnvAutoscalingGroup } from "../crd/autoscaling.ts";
import { SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import { scalingGroupOf } from "../membership/env-members.ts";
import { foreignMemberPool } from "../membership/env-ownership.ts";
import { ownedBy } from "../membership/pod-ownership.ts";
import { servedMarks } from "../pool/pending-requests.ts";
import { podTemplateIssues } from "../pool/pod-template-checks.ts";
import { rfc3339 } from "../util/time.ts";
import type { MemberView } from "./member-report.ts";
import { saturatedUntil } from "./saturation.ts";

/** STALL_REASON lists why a group has stalled: AutoscalingActive's reasons when it is False for that. */
export const STALL_REASON = {
  /** BOUNDS_UNSATISFIABLE: the group's and its members' min/max can never all hold. */
  BOUNDS_UNSATISFIABLE: "BoundsUnsatisfiable",
  /** TEMPLATE_CANNOT_RENDER: a member's pods cannot be rendered from the Env's template. */
  TEMPLATE_CANNOT_RENDER: "TemplateCannotRender",
  /** MEMBERS_FAILING: every member's pod creates are refused (the probe says Failed). */
  MEMBERS_FAILING: "MembersFailing",
  /** GROUP_AT_MAX_REPLICAS: creates wait that nothing serves, and the group is at its maxReplicas. */
  GROUP_AT_MAX_REPLICAS: "GroupAtMaxReplicas",
  /** MEMBERS_SATURATED: creates wait that nothing serves, and every member is saturated or failing. */
  MEMBERS_SATURATED: "MembersSaturated",
} as const;
export type StallReason = (typeof STALL_REASON)[keyof typeof STALL_REASON];

/** GroupStall is one enabled group that has stalled, with why, in words an operator can act on. */
export interface GroupStall {
  group: string;
  reason: StallReason;
  message: string;
}

/** StallMember is one local member of the group: its view (member, pool, render) and its load. */
export interface StallMember {
  view: MemberView;
  load: MemberLoad;
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/**
 * boundsProblems says which of the group's bounds can never hold, whatever the autoscaler does:
 * a member's minReplicas above its maxReplicas, the group's minReplicas above its maxReplicas or
 * above what its members can hold (every member capped, their maxReplicas summed), the group's
 * maxReplicas below its members' minReplicas summed. Admission refuses the first two; an Env
 * stored before the webhook ran may still have them.
 */
function boundsProblems(group: EnvAutoscalingGroup, members: readonly StallMember[]): string[] {
  const { minReplicas, maxReplicas } = groupPolicies(group);
  const problems: string[] = [];
  for (const { view } of members) {
    const { minReplicas: min = 0, maxReplicas: max } = view.member.config ?? {};
    if (max !== undefined && min > max)
      problems.push(`member ${view.member.name}: minReplicas ${min} is above its maxReplicas ${max}`);
  }
  if (maxReplicas !== undefined && minReplicas > maxReplicas)
    problems.push(`minReplicas ${minReplicas} is above maxReplicas ${maxReplicas}`);
  const caps = members.map((m) => m.view.member.config?.maxReplicas);
  const held = sum(caps.map((c) => c ?? 0));
  if (caps.every((c) => c !== undefined) && minReplicas > held)
    problems.push(
      `minReplicas ${minReplicas} is above what its members can hold (their maxReplicas add up to ${held})`,
    );
  const floors = sum(members.map((m) => m.view.member.config?.minReplicas ?? 0));
  if (maxReplicas !== undefined && floors > maxReplicas)
    problems.push(`maxReplicas ${maxReplicas} is below its members' minReplicas (they add up to ${floors})`);
  return problems;
}

/**
 * renderProblem says why a member's pods cannot be rendered, if they cannot: the render has a pod
 * template that cannot become a Pod (podTemplateIssues, as admission and the pool's creationBlock
 * check it), or the render is incomplete (the template is missing, or not at the pinned version)
 * and the member has no pool yet to keep its last render. A member whose pool exists keeps
 * serving from that pool's copy while the render is incomplete (TemplateConsistent says so).
 */
function renderProblem(view: MemberView): string | undefined {
  const { rendered, pool } = view;
  if (!rendered.complete) return pool ? undefined : (rendered.problem ?? "its pool cannot be rendered");
  const issues = podTemplateIssues(rendered.spec, "spec");
  if (issues.length === 0) return undefined;
  return `pods cannot be rendered: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`;
}

/** failing: the member's pool is refused Pods for a reason no wait cures (its probe says Failed). */
function failing(m: StallMember): string | undefined {
  return m.load.pool && m.load.probe.result === "Failed" ? m.load.probe.message : undefined;
}

/**
 * saturation says why a member cannot grow now, if it cannot: its last scale-up attempt saturated
 * it and the group's saturationCooldownSeconds have not passed, the cluster would not take more of
 * its Pods (the probe says Insufficient), or it is at its maxReplicas (seed 002,
 * ObservedMemberStateSaturated: "member hit its maxReplicas or returned InsufficientQuota").
 */
function saturation(m: StallMember, cooldownSeconds: number, now: Date): string | undefined {
  const { pool, probe, autoscaling, desired, config } = m.load;
  const until = pool ? saturatedUntil(pool, cooldownSeconds) : undefined;
  if (until && until > now)
    return `saturated until ${rfc3339(until)} (${autoscaling?.lastScaleUpAttemptResult}${autoscaling?.scaleUpErrorMessage ? `: ${autoscaling.scaleUpErrorMessage}` : ""})`;
  if (probe.result === "Insufficient") return probe.message;
  const max = config?.maxReplicas;
  return max !== undefined && desired >= max ? `at its maxReplicas (${max})` : undefined;
}

/**
 * unmetDemand is the group's waiting creates that no idle, resetting or ordered Pod will serve,
 * counted as the autoscaler counts them: a member's replicas not yet created count as on their
 * way only while its probe is Enough and it is not in its saturation cooldown.
 */
function unmetDemand(live: readonly StallMember[], cooldownSeconds: number, now: Date): number {
  const supply = live.map(({ load }) => {
    const until = load.pool ? saturatedUntil(load.pool, cooldownSeconds) : undefined;
    const growing = load.probe.result === "Enough" && !(until && until > now);
    return load.idle.length + load.stopping + (growing ? Math.max(0, load.desired - load.existing) : 0);
  });
  return Math.max(0, sum(live.map((m) => m.load.pending)) - sum(supply));
}

/** listed joins members' reasons: "a: why; b: why". */
const listed = (entries: readonly [string, string][]) =>
  entries.map(([name, why]) => `${name}: ${why}`).join("; ");

/**
 * groupStall decides whether one enabled group with local members has stalled, checking in this
 * order: bounds that can never hold (BoundsUnsatisfiable); a member whose pods cannot be rendered
 * (TemplateCannotRender); every live member failing (MembersFailing); then, only while creates
 * wait that nothing there or on its way will serve: the group at its maxReplicas
 * (GroupAtMaxReplicas), or every live member saturated or failing (MembersSaturated). A member
 * without a live pool yet (about to be created) is neither failing nor saturated.
 */
export function groupStall(
  group: EnvAutoscalingGroup,
  members: readonly StallMember[],
  now: Date,
): GroupStall | undefined {
  const stall = (reason: StallReason, message: string): GroupStall => ({
    group: group.name,
    reason,
    message,
  });
  const bounds = boundsProblems(group, members);
  if (bounds.length > 0)
    return stall(STALL_REASON.BOUNDS_UNSATISFIABLE, `bounds that can never be met: ${bounds.join("; ")}`);
  const unrenderable = members.flatMap((m): [string, string][] => {
    const why = renderProblem(m.view);
    return why ? [[m.view.member.name, why]] : [];
  });
  if (unrenderable.length > 0)
    return stall(
      STALL_REASON.TEMPLATE_CANNOT_RENDER,
      `member pods cannot be rendered: ${listed(unrenderable)}`,
    );
  const live = members.filter((m) => m.load.pool !== undefined);
  if (live.length === 0) return undefined;
  const failures = live.map((m): [string, string | undefined] => [m.view.member.name, failing(m)]);
  if (failures.every(([, why]) => why !== undefined))
    return stall(
      STALL_REASON.MEMBERS_FAILING,
      `every member's pods are refused: ${listed(failures as [string, string][])}`,
    );
  const { maxReplicas, scaleUp } = groupPolicies(group);
  const waiting = unmetDemand(live, scaleUp.saturationCooldownSeconds, now);
  if (waiting === 0) return undefined;
  const total = sum(members.map((m) => m.load.desired));
  if (maxReplicas !== undefined && total >= maxReplicas)
    return stall(
      STALL_REASON.GROUP_AT_MAX_REPLICAS,
      `${waiting} create(s) wait that no pod will serve, and the group is at its maxReplicas (${maxReplicas})`,
    );
  const stuck = live.map((m): [string, string | undefined] => [
    m.view.member.name,
    failing(m) ?? saturation(m, scaleUp.saturationCooldownSeconds, now),
  ]);
  if (stuck.every(([, why]) => why !== undefined))
    return stall(
      STALL_REASON.MEMBERS_SATURATED,
      `${waiting} create(s) wait that no pod will serve, and no member can grow: ${listed(stuck as [string, string][])}`,
    );
  return undefined;
}

/**
 * autoscalingStalls decides every enabled group of the Env that has local members (`views`, as
 * planEnv renders them; `pods` are the pods of the autoscaled members): the stalled ones, in the
 * order of spec.autoscaling.groups. Pools another owner holds are not the Env's (the Env status
 * calls their members Inconsistent) and count as missing, as the autoscaler counts them.
 */
export function autoscalingStalls(
  env: SandboxEnv,
  views: readonly MemberView[],
  pods: readonly V1Pod[],
  clusterId: string,
  now: Date,
): GroupStall[] {
  const poolOf = (view: MemberView) =>
    view.pool && !foreignMemberPool(view.pool, env) ? view.pool : undefined;
  const podsOf = (view: MemberView) => {
    const pool = poolOf(view);
    return pool
      ? pods.filter((p) => p.metadata?.labels?.[SANDBOX_POOL_LABEL] === view.member.name && ownedBy(p, pool))
      : [];
  };
  const served = servedMarks(views.flatMap(podsOf));
  return (env.spec.autoscaling?.groups ?? []).flatMap((group) => {
    if (!group.enabled) return [];
    const members: StallMember[] = views
      .filter((view) => scalingGroupOf(view.member) === group.name)
      .map((view) => ({
        view,
        load: loadMember(view.member, clusterId, poolOf(view), podsOf(view), now, served),
      }));
    const stalled = members.length > 0 ? groupStall(group, members, now) : undefined;
    return stalled ? [stalled] : [];
  });
}
