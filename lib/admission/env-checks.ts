// Admission rules for SandboxEnv that OpenAPI and CEL cannot express: they relate list items
// to each other (groups to members, names across clusters) or encode "not served yet".
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import { podTemplateAnnotationIssues, podTemplateIssues } from "../pool/pod-template-checks.ts";
import type { Check } from "./check.ts";

type Member = NonNullable<NonNullable<SandboxEnv["spec"]["clusters"]>[number]["members"]>[number];

/** members lists every member with its field path, across all cluster segments. */
export function members(env: SandboxEnv): { member: Member; path: string }[] {
  return (env.spec.clusters ?? []).flatMap((cluster, ci) =>
    (cluster.members ?? []).map((member, mi) => ({ member, path: `spec.clusters[${ci}].members[${mi}]` })),
  );
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** modeServed: OnDemandJob is reserved upstream and has no implementation here either. */
export const modeServed: Check<SandboxEnv> = {
  name: "mode-served",
  run: (env) =>
    env.spec.mode === "OnDemandJob"
      ? [{ path: "spec.mode", message: 'OnDemandJob is not served yet; use "WarmPool"' }]
      : [],
};

/** memberNamesUnique: a member name is a SandboxPool name, unique in the namespace across clusters. */
export const memberNamesUnique: Check<SandboxEnv> = {
  name: "member-names-unique",
  run: (env) => {
    const first = new Map<string, string>();
    return members(env).flatMap(({ member, path }) => {
      const earlier = first.get(member.name);
      if (earlier)
        return [
          { path: `${path}.name`, message: `duplicate member name "${member.name}" (also ${earlier})` },
        ];
      first.set(member.name, path);
      return [];
    });
  },
};

/** memberNamesValid: member names become SandboxPool metadata.name, a DNS subdomain. */
export const memberNamesValid: Check<SandboxEnv> = {
  name: "member-names-valid",
  run: (env) =>
    members(env)
      .filter(({ member }) => !DNS_SUBDOMAIN.test(member.name) || member.name.length > 253)
      .map(({ path }) => ({
        path: `${path}.name`,
        message:
          "must be a DNS subdomain (lowercase letters, digits, '-', '.'), it names the member SandboxPool",
      })),
};

/** groupsMatchMembers: a group no member references has no effect and hides a typo. */
export const groupsMatchMembers: Check<SandboxEnv> = {
  name: "autoscaling-group-has-member",
  run: (env) => {
    const used = new Set(members(env).map(({ member }) => member.config?.scalingGroup ?? ""));
    const choices = [...used].filter((g) => g !== "").sort();
    return (env.spec.autoscaling?.groups ?? []).flatMap((group, gi) =>
      used.has(group.name)
        ? []
        : [
            {
              path: `spec.autoscaling.groups[${gi}].name`,
              message: `group "${group.name}" matches no member's config.scalingGroup (members use: ${choices.length ? choices.join(", ") : "none"})`,
            },
          ],
    );
  },
};

/** instanceTypeNeedsMultiplier: an InstanceType alone does not say how large a Pod is. */
export const instanceTypeNeedsMultiplier: Check<SandboxEnv> = {
  name: "instance-type-requires-multiplier",
  run: (env) => {
    const issues = members(env)
      .filter(({ member }) => member.config?.instanceType && !member.config.multiplier)
      .map(({ path }) => ({
        path: `${path}.config.multiplier`,
        message: "is required (>= 1) when config.instanceType is set",
      }));
    if (env.spec.defaults?.instanceType && !env.spec.defaults.multiplier) {
      issues.push({
        path: "spec.defaults.multiplier",
        message: "is required (>= 1) when defaults.instanceType is set",
      });
    }
    return issues;
  },
};

/** replicaBoundsOrdered: a floor above the ceiling can never be satisfied. */
export const replicaBoundsOrdered: Check<SandboxEnv> = {
  name: "replica-bounds-ordered",
  run: (env) => {
    const issues = members(env)
      .filter(({ member }) => {
        const c = member.config;
        return c?.minReplicas !== undefined && c.maxReplicas !== undefined && c.minReplicas > c.maxReplicas;
      })
      .map(({ path }) => ({
        path: `${path}.config.minReplicas`,
        message: "must not exceed config.maxReplicas",
      }));
    (env.spec.autoscaling?.groups ?? []).forEach((g, gi) => {
      if (g.minReplicas !== undefined && g.maxReplicas !== undefined && g.minReplicas > g.maxReplicas) {
        issues.push({
          path: `spec.autoscaling.groups[${gi}].minReplicas`,
          message: "must not exceed maxReplicas",
        });
      }
    });
    return issues;
  },
};

/**
 * scalingGroupUniform: members of one scaling group must have one instance shape (the same
 * instanceType and multiplier, or the same inlineResources), or the autoscaler's per-group
 * arithmetic would mix Pods of different sizes and a create asking for a shape would find part
 * of a group (ADR 0032: shapes compare by name, not by the resources they happen to resolve to).
 */
export const scalingGroupUniform: Check<SandboxEnv> = {
  name: "scaling-group-uniform-resources",
  run: (env) => {
    const shapeOf = (m: Member) =>
      m.config?.instanceType
        ? `instanceType ${m.config.instanceType} x${m.config.multiplier ?? 0}`
        : Object.keys(m.config?.inlineResources ?? {}).length > 0
          ? `inlineResources ${JSON.stringify(m.config?.inlineResources)}`
          : "the template's resources";
    const firstByGroup = new Map<string, { shape: string; name: string; path: string }>();
    return members(env).flatMap(({ member, path }) => {
      const group = member.config?.scalingGroup ?? "";
      if (group === "") return [];
      const shape = shapeOf(member);
      const first = firstByGroup.get(group);
      if (!first) {
        firstByGroup.set(group, { shape, name: member.name, path });
        return [];
      }
      return first.shape === shape
        ? []
        : [
            {
              path: `${path}.config`,
              message: `scaling group "${group}" mixes instance shapes: member "${member.name}" has ${shape}, member "${first.name}" (${first.path}) has ${first.shape}; a group's members share one shape`,
            },
          ];
    });
  },
};

/** memberPodTemplates: a member's pool spec snapshot must be able to render Pods. */
export const memberPodTemplates: Check<SandboxEnv> = {
  name: "member-pod-template",
  run: (env) =>
    members(env).flatMap(({ member, path }) =>
      member.spec && !member.spec.templateName && member.spec.template !== undefined
        ? [
            ...podTemplateIssues(member.spec, `${path}.spec`),
            ...podTemplateAnnotationIssues(member.spec, `${path}.spec`),
          ]
        : [],
    ),
};

/** ENV_CHECKS are applied to every SandboxEnv create and spec update. */
export const ENV_CHECKS = [
  modeServed,
  memberNamesValid,
  memberNamesUnique,
  groupsMatchMembers,
  instanceTypeNeedsMultiplier,
  replicaBoundsOrdered,
  scalingGroupUniform,
  memberPodTemplates,
] as const;
