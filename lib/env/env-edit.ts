// Planning an operator's edit of an Env (issue #26, section 3): from the Env as read and an
// EnvEdit, the JSON Patch that makes it (preconditioned on the spec read: uid and generation) or a
// clear refusal naming the field. Only the local segment's members are edited (seed 001: each
// segment belongs to the worker of its cluster). The rules that relate fields to each other
// (bounds in order, one shape per group, a group with a member) are admission's, which every
// write through the apiserver meets; envEditRejection words its answer for the caller.
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import { isTerminating, testSpec } from "../kube/action.ts";
import type { JsonPatchOp } from "../kube/json-patch.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import type { EnvEdit } from "./env-edit-request.ts";

/**
 * EnvEditPlan is the patch of an edit (no ops: the Env already is so) with what it changes, or
 * the refusal: 404 for a member or group the Env does not have, 409 for one it has already or an
 * Env being deleted; `field` names the request field at fault.
 */
export type EnvEditPlan =
  | { ok: true; ops: JsonPatchOp[]; summary: string; next: SandboxEnv }
  | { ok: false; status: 404 | 409; field: string; message: string };

type Raw = Record<string, unknown>;
type Member = NonNullable<NonNullable<SandboxEnv["spec"]["clusters"]>[number]["members"]>[number];

const refuse = (status: 404 | 409, field: string, message: string): EnvEditPlan => ({
  ok: false,
  status,
  field,
  message,
});
const show = (x: unknown) => (x === undefined ? "unset" : JSON.stringify(x));

/**
 * fieldChanges plans `set` (null removes a field, undefined leaves it) on the object `current` at
 * `base`: ops only for what differs, and lines saying what changed.
 */
function fieldChanges(
  base: string,
  label: string,
  current: Raw,
  set: Readonly<Record<string, unknown>>,
): { ops: JsonPatchOp[]; lines: string[]; next: Raw } {
  const ops: JsonPatchOp[] = [];
  const lines: string[] = [];
  const next: Raw = { ...current };
  for (const [field, value] of Object.entries(set)) {
    if (value === undefined) continue;
    const path = `${base}/${escapePointer(field)}`;
    if (value === null) {
      if (current[field] === undefined) continue;
      ops.push({ op: "remove", path });
      delete next[field];
    } else {
      if (jsonEqual(current[field], value)) continue;
      ops.push({ op: "add", path, value });
      next[field] = value;
    }
    lines.push(`${label}${field} ${show(current[field])}→${show(value ?? undefined)}`);
  }
  return { ops, lines, next };
}

/** withoutNulls drops null and undefined fields (what a new object of an edit carries). */
function withoutNulls(o: Readonly<Record<string, unknown>>): Raw {
  return Object.fromEntries(Object.entries(o).filter(([, x]) => x !== null && x !== undefined));
}

/** planEnvEdit plans one edit of the Env's segment for clusterId (see EnvEditPlan). */
export function planEnvEdit(env: SandboxEnv, edit: EnvEdit, clusterId: string): EnvEditPlan {
  const key = `${env.metadata?.namespace}/${env.metadata?.name}`;
  if (isTerminating(env)) return refuse(409, "env", `SandboxEnv "${key}" is being deleted`);
  const next = structuredClone(env);
  const plan = (ops: JsonPatchOp[], summary: string): EnvEditPlan => ({
    ok: true,
    ops: ops.length > 0 ? [...testSpec(env), ...ops] : [],
    summary: ops.length > 0 ? summary : `SandboxEnv "${key}" already is so: nothing to change`,
    next,
  });
  if (edit.op === "set-group" || edit.op === "remove-group") return planGroupEdit(env, next, edit, plan, key);
  const clusters = env.spec.clusters ?? [];
  const c = clusters.findIndex((s) => s.clusterID === clusterId);
  const members = c >= 0 ? (clusters[c]?.members ?? []) : [];
  const j = members.findIndex((m) => m.name === edit.member);
  const names = members.map((m) => m.name).join(", ") || "none";
  const segment = `/spec/clusters/${c}`;
  if (edit.op === "add-member") {
    if (j >= 0) return refuse(409, "member", `SandboxEnv "${key}" already has a member "${edit.member}"`);
    const elsewhere = clusters.find((s) => (s.members ?? []).some((m) => m.name === edit.member));
    if (elsewhere)
      return refuse(
        409,
        "member",
        `member "${edit.member}" already belongs to cluster segment "${elsewhere.clusterID}" of SandboxEnv "${key}" (a member name names one pool in the namespace)`,
      );
    const member: Member = {
      name: edit.member,
      ...(edit.config ? { config: edit.config as Member["config"] } : {}),
      ...(edit.replicas !== undefined ? { spec: { replicas: edit.replicas } as Member["spec"] } : {}),
    } as Member;
    const segmentValue = { clusterID: clusterId, members: [member] };
    let op: JsonPatchOp;
    if (!env.spec.clusters) op = { op: "add", path: "/spec/clusters", value: [segmentValue] };
    else if (c < 0) op = { op: "add", path: "/spec/clusters/-", value: segmentValue };
    else if (!clusters[c]?.members) op = { op: "add", path: `${segment}/members`, value: [member] };
    else op = { op: "add", path: `${segment}/members/-`, value: member };
    const nextClusters = next.spec.clusters ?? [];
    next.spec.clusters = nextClusters;
    const nextSegment = nextClusters.find((s) => s.clusterID === clusterId);
    if (nextSegment) nextSegment.members = [...(nextSegment.members ?? []), member];
    else nextClusters.push(segmentValue);
    return plan(
      [op],
      `added member "${edit.member}" to cluster segment "${clusterId}" (its pool is made by the Env's next run)`,
    );
  }
  if (j < 0)
    return refuse(
      404,
      "member",
      `SandboxEnv "${key}" has no member "${edit.member}" in cluster segment "${clusterId}" (members: ${names})`,
    );
  const base = `${segment}/members/${j}`;
  const nextMembers = next.spec.clusters?.[c]?.members ?? [];
  if (edit.op === "remove-member") {
    nextMembers.splice(j, 1);
    return plan(
      [
        { op: "test", path: `${base}/name`, value: edit.member },
        { op: "remove", path: base },
      ],
      `removed member "${edit.member}" (the Env's next run records its sandboxes and deletes its pool)`,
    );
  }
  const member = members[j] as Member;
  const ops: JsonPatchOp[] = [];
  const lines: string[] = [];
  const nextMember = nextMembers[j] as Member;
  if (edit.config) {
    if (member.config === undefined) {
      // A member without a config is in no scaling group; a config written without one would be
      // defaulted into "default" by the CRD, so the new config says "" unless the edit names one.
      const created = { scalingGroup: "", ...withoutNulls(edit.config) };
      if (Object.keys(withoutNulls(edit.config)).length > 0) {
        ops.push({ op: "add", path: `${base}/config`, value: created });
        nextMember.config = created as Member["config"];
        lines.push(
          ...Object.entries(withoutNulls(edit.config)).map(([f, x]) => `config.${f} unset→${show(x)}`),
        );
      }
    } else {
      const changed = fieldChanges(`${base}/config`, "config.", member.config as Raw, edit.config);
      ops.push(...changed.ops);
      lines.push(...changed.lines);
      nextMember.config = changed.next as Member["config"];
    }
  }
  if (edit.replicas !== undefined && member.spec?.replicas !== edit.replicas) {
    ops.push(
      member.spec
        ? { op: "add", path: `${base}/spec/replicas`, value: edit.replicas }
        : { op: "add", path: `${base}/spec`, value: { replicas: edit.replicas } },
    );
    nextMember.spec = { ...(member.spec ?? {}), replicas: edit.replicas } as Member["spec"];
    lines.push(`replicas ${show(member.spec?.replicas)}→${edit.replicas}`);
    const group = (nextMember.config?.scalingGroup as string | undefined) ?? "";
    const enabled = env.spec.autoscaling?.groups?.some((g) => g.name === group && g.enabled);
    if (group && enabled)
      lines.push(`(group "${group}" is autoscaled: the autoscaler moves these replicas within the bounds)`);
  }
  return plan(ops, `set member "${edit.member}": ${lines.join(", ")}`);
}

type PlanFn = (ops: JsonPatchOp[], summary: string) => EnvEditPlan;
type GroupEdit = Extract<EnvEdit, { op: "set-group" | "remove-group" }>;
type Group = NonNullable<NonNullable<SandboxEnv["spec"]["autoscaling"]>["groups"]>[number];

/** planGroupEdit plans set-group and remove-group on spec.autoscaling.groups. */
function planGroupEdit(env: SandboxEnv, next: SandboxEnv, edit: GroupEdit, plan: PlanFn, key: string) {
  const groups = env.spec.autoscaling?.groups ?? [];
  const i = groups.findIndex((g) => g.name === edit.group);
  const base = `/spec/autoscaling/groups/${i}`;
  const nextGroups = next.spec.autoscaling?.groups ?? [];
  if (edit.op === "remove-group") {
    if (i < 0)
      return refuse(
        404,
        "group",
        `SandboxEnv "${key}" has no autoscaling group "${edit.group}" (groups: ${groups.map((g) => g.name).join(", ") || "none"})`,
      );
    nextGroups.splice(i, 1);
    return plan(
      [
        { op: "test", path: `${base}/name`, value: edit.group },
        { op: "remove", path: base },
      ],
      `removed autoscaling group "${edit.group}" (its members' replicas stay where they are, set by hand from now on)`,
    );
  }
  const top = { enabled: edit.enabled, minReplicas: edit.minReplicas, maxReplicas: edit.maxReplicas };
  if (i < 0) {
    const group = {
      name: edit.group,
      ...withoutNulls(top),
      ...(edit.scaleUpPolicy ? { scaleUpPolicy: withoutNulls(edit.scaleUpPolicy) } : {}),
      ...(edit.scaleDownPolicy ? { scaleDownPolicy: withoutNulls(edit.scaleDownPolicy) } : {}),
    } as Group;
    const op: JsonPatchOp = !env.spec.autoscaling
      ? { op: "add", path: "/spec/autoscaling", value: { groups: [group] } }
      : !env.spec.autoscaling.groups
        ? { op: "add", path: "/spec/autoscaling/groups", value: [group] }
        : { op: "add", path: "/spec/autoscaling/groups/-", value: group };
    next.spec.autoscaling = {
      ...next.spec.autoscaling,
      groups: [...(next.spec.autoscaling?.groups ?? []), group],
    };
    return plan(
      [op],
      `added autoscaling group "${edit.group}" ${JSON.stringify(withoutNulls({ ...group, name: undefined }))}`,
    );
  }
  const current = groups[i] as unknown as Raw;
  const changed = fieldChanges(base, "", current, top);
  const ops = [...changed.ops];
  const lines = [...changed.lines];
  const nextGroup: Raw = { ...changed.next };
  for (const [policy, set] of [
    ["scaleUpPolicy", edit.scaleUpPolicy],
    ["scaleDownPolicy", edit.scaleDownPolicy],
  ] as const) {
    if (!set) continue;
    const was = current[policy] as Raw | undefined;
    if (was === undefined) {
      ops.push({ op: "add", path: `${base}/${policy}`, value: withoutNulls(set) });
      nextGroup[policy] = withoutNulls(set);
      lines.push(`${policy} ${JSON.stringify(withoutNulls(set))}`);
      continue;
    }
    const p = fieldChanges(`${base}/${policy}`, `${policy}.`, was, set);
    ops.push(...p.ops);
    lines.push(...p.lines);
    nextGroup[policy] = p.next;
  }
  nextGroups[i] = nextGroup as unknown as Group;
  return plan(ops, `set autoscaling group "${edit.group}": ${lines.join(", ")}`);
}
