// The Env's three conditions, each with a reason a dashboard can switch on and a message an
// operator can act on.
import { ENV_CONDITION } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { ConditionCore } from "../util/conditions.ts";
import type { GroupStall } from "./autoscaling-stall.ts";
import type { MemberReport } from "./member-report.ts";

/**
 * ENV_REASON lists the reasons of the Env conditions. AutoscalingActive is also False with a
 * STALL_REASON (autoscaling-stall.ts) when an enabled group has stalled.
 */
export const ENV_REASON = {
  ALL_MEMBERS_ACTIVE: "AllMembersActive",
  MEMBERS_NOT_ACTIVE: "MembersNotActive",
  NO_MEMBERS: "NoLocalMembers",
  TEMPLATE_CONSISTENT: "TemplateConsistent",
  TEMPLATE_NOT_FOUND: "TemplateNotFound",
  TEMPLATE_MISMATCH: "TemplateMismatch",
  MEMBERS_BEHIND: "MembersBehindTemplate",
  NO_GROUPS: "NoAutoscalingGroups",
  DISABLED: "AutoscalingDisabled",
  AUTOSCALING: "GroupsAutoscaled",
} as const;

/** ready: every local member is Active (an Env without local members is not Ready). */
function ready(reports: readonly MemberReport[]): ConditionCore {
  const type = ENV_CONDITION.READY;
  if (reports.length === 0)
    return {
      type,
      status: "False",
      reason: ENV_REASON.NO_MEMBERS,
      message: "no members in this cluster's segment",
    };
  const notActive = reports.filter((r) => r.observed.state !== "Active");
  if (notActive.length === 0)
    return {
      type,
      status: "True",
      reason: ENV_REASON.ALL_MEMBERS_ACTIVE,
      message: `all ${reports.length} member(s) are Active`,
    };
  return {
    type,
    status: "False",
    reason: ENV_REASON.MEMBERS_NOT_ACTIVE,
    message: notActive
      .map((r) => `${r.observed.name}: ${r.observed.state}${r.why ? ` (${r.why})` : ""}`)
      .join("; "),
  };
}

/**
 * templateConsistent: the template exists, every member pool uses it (and the pinned version) and
 * renders from its current revision. Seed 002: "TemplateConsistent indicates every member Pool
 * references the same Template name (and version, if pinned)", and "Template upgrades do NOT
 * auto-propagate into Spec; an explicit RefreshMember API ... is the way to align an existing
 * member with a newer Template revision": a member behind the template makes it False with
 * MembersBehindTemplate (its state stays as it is; it serves as before).
 */
function templateConsistent(
  env: SandboxEnv,
  reports: readonly MemberReport[],
  templateFound: boolean,
): ConditionCore {
  const type = ENV_CONDITION.TEMPLATE_CONSISTENT;
  const ref = env.spec.templateRef;
  const pinned = ref.version ? ` at version "${ref.version}"` : "";
  if (!ref.name && reports.every((r) => r.observed.state !== "Inconsistent"))
    return {
      type,
      status: "True",
      reason: ENV_REASON.TEMPLATE_CONSISTENT,
      message: "the Env names no template; its members are stamped from their spec snapshots",
    };
  if (!templateFound)
    return {
      type,
      status: "False",
      reason: ENV_REASON.TEMPLATE_NOT_FOUND,
      message: `SandboxTemplate "${ref.name}" does not exist`,
    };
  const off = reports.filter((r) => r.observed.state === "Inconsistent");
  const behind = reports.filter((r) => r.behind);
  if (off.length === 0 && behind.length > 0)
    return {
      type,
      status: "False",
      reason: ENV_REASON.MEMBERS_BEHIND,
      message: `member(s) behind SandboxTemplate "${ref.name}" until refreshed (refresh-member): ${behind.map((r) => `${r.observed.name} ${r.behind}`).join("; ")}`,
    };
  if (off.length === 0)
    return {
      type,
      status: "True",
      reason: ENV_REASON.TEMPLATE_CONSISTENT,
      message: `every member pool uses SandboxTemplate "${ref.name}"${pinned}`,
    };
  return {
    type,
    status: "False",
    reason: ENV_REASON.TEMPLATE_MISMATCH,
    message: off.map((r) => `${r.observed.name}: ${r.why ?? "inconsistent"}`).join("; "),
  };
}

/**
 * autoscalingActive: whether the autoscaler manages any group (it writes those members' replicas;
 * the others stay where users set them) and none of them has stalled (seed 002,
 * SandboxEnvConditionAutoscalingActive: "configured, enabled, and has not stalled due to
 * misconfiguration"). With stalled groups it is False with the first one's reason and every
 * stalled group's message.
 */
function autoscalingActive(env: SandboxEnv, stalls: readonly GroupStall[]): ConditionCore {
  const type = ENV_CONDITION.AUTOSCALING_ACTIVE;
  const groups = env.spec.autoscaling?.groups ?? [];
  if (groups.length === 0)
    return {
      type,
      status: "False",
      reason: ENV_REASON.NO_GROUPS,
      message: "no autoscaling groups; replicas are manual",
    };
  const enabled = groups.filter((g) => g.enabled).map((g) => g.name);
  if (enabled.length === 0)
    return {
      type,
      status: "False",
      reason: ENV_REASON.DISABLED,
      message: "every autoscaling group is disabled; replicas are manual",
    };
  const [first] = stalls;
  if (first)
    return {
      type,
      status: "False",
      reason: first.reason,
      message: stalls.map((s) => `group ${s.group} has stalled (${s.reason}): ${s.message}`).join("; "),
    };
  return {
    type,
    status: "True",
    reason: ENV_REASON.AUTOSCALING,
    message: `group(s) ${enabled.join(", ")} are autoscaled: the autoscaler sets their members' spec.replicas`,
  };
}

/**
 * envConditions are the Env's Ready, TemplateConsistent and AutoscalingActive conditions; `stalls`
 * are the enabled groups that have stalled (autoscalingStalls).
 */
export function envConditions(
  env: SandboxEnv,
  reports: readonly MemberReport[],
  templateFound: boolean,
  stalls: readonly GroupStall[] = [],
): ConditionCore[] {
  return [ready(reports), templateConsistent(env, reports, templateFound), autoscalingActive(env, stalls)];
}
