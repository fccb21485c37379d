import { describe, expect, it } from "vitest";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import { planEnvEdit } from "../../lib/env/env-edit.ts";
import { type EnvEdit, editFromFields } from "../../lib/env/env-edit-request.ts";
import type { JsonPatchOp } from "../../lib/kube/json-patch.ts";
import { autoscalingGroup } from "../support/autoscaling-group.ts";
import { envWithMembers } from "../support/env-member.ts";

/** apply is RFC 6902 as the apiserver applies our ops (tests must hold; `-` appends). */
function apply(doc: unknown, ops: readonly JsonPatchOp[]): unknown {
  const out = structuredClone(doc) as Record<string, unknown>;
  for (const op of ops) {
    const keys = op.path
      .split("/")
      .slice(1)
      .map((k) => k.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = keys.pop() ?? "";
    let parent: Record<string, unknown> | unknown[] = out;
    for (const k of keys) parent = (parent as Record<string, unknown>)[k] as Record<string, unknown>;
    if (parent === undefined) throw new Error(`no parent for ${op.path}`);
    const at = (parent as Record<string, unknown>)[last];
    if (op.op === "test") {
      if (JSON.stringify(at) !== JSON.stringify(op.value)) throw new Error(`test failed at ${op.path}`);
    } else if (op.op === "remove") {
      if (at === undefined) throw new Error(`nothing to remove at ${op.path}`);
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else if (Array.isArray(parent)) {
      if (last === "-") parent.push(op.value);
      else if (op.op === "add") parent.splice(Number(last), 0, op.value);
      else parent[Number(last)] = op.value;
    } else parent[last] = op.value;
  }
  return out;
}

const env = () =>
  envWithMembers(
    [
      { name: "a", config: { scalingGroup: "g", minReplicas: 1, maxReplicas: 4 }, spec: { replicas: 2 } },
      { name: "b" },
    ] as Parameters<typeof envWithMembers>[0],
    {
      autoscaling: {
        groups: [autoscalingGroup({ name: "g", enabled: true, minReplicas: 1, maxReplicas: 8 })],
      },
    },
  );

/** planned plans an edit given as flat fields and checks that its ops turn the Env into `next`. */
function planned(e: SandboxEnv, op: string, fields: Record<string, string>) {
  const edit = editFromFields(op, fields);
  if (!edit.ok) throw new Error(JSON.stringify(edit.issues));
  const plan = planEnvEdit(e, edit.value, "local");
  if (plan.ok && plan.ops.length > 0) expect(apply(e, plan.ops)).toEqual(plan.next);
  return plan;
}

describe("editFromFields", () => {
  it("reads numbers, booleans and `none` from text, leaving empty fields as they are", () => {
    const edit = editFromFields("set-member", {
      member: "a",
      maxReplicas: "6",
      minReplicas: "",
      priority: "none",
    });
    expect(edit).toEqual({
      ok: true,
      value: { op: "set-member", member: "a", config: { maxReplicas: 6, priority: null } },
    });
    const group = editFromFields("set-group", {
      group: "g",
      enabled: "false",
      cooldownSeconds: "10",
      mode: "Aggressive",
    });
    expect(group).toEqual({
      ok: true,
      value: {
        op: "set-group",
        group: "g",
        enabled: false,
        scaleUpPolicy: { cooldownSeconds: 10, mode: "Aggressive" },
      },
    });
  });

  it("names the field of a bad value, an unknown field, a missing member and an unknown edit", () => {
    expect(editFromFields("set-member", { member: "a", maxReplicas: "-1" })).toEqual({
      ok: false,
      issues: [{ path: "config.maxReplicas", message: "must be a whole number, at least 0" }],
    });
    expect(editFromFields("set-member", { member: "a", maxReplicas: "lots" })).toMatchObject({
      ok: false,
      issues: [{ path: "config.maxReplicas" }],
    });
    expect(editFromFields("set-member", { member: "a", colour: "red" })).toEqual({
      ok: false,
      issues: [{ path: "colour", message: "unknown field" }],
    });
    expect(editFromFields("add-member", { member: "Not_A_Name" })).toMatchObject({
      ok: false,
      issues: [{ path: "member" }],
    });
    expect(editFromFields("set-group", { group: "g", enabled: "yes" })).toMatchObject({
      ok: false,
      issues: [{ path: "enabled", message: "must be true or false" }],
    });
    expect(editFromFields("rename", {})).toMatchObject({ ok: false, issues: [{ path: "op" }] });
    expect(editFromFields("add-member", { multiplier: "0", member: "c" })).toMatchObject({
      ok: false,
      issues: [{ path: "config.multiplier", message: "must be a whole number, at least 1" }],
    });
  });
});

describe("planEnvEdit", () => {
  it("adds a member at the end of the local segment under the spec it read", () => {
    const plan = planned(env(), "add-member", {
      member: "c",
      replicas: "1",
      scalingGroup: "g",
      maxReplicas: "3",
    });
    expect(plan).toMatchObject({
      ok: true,
      ops: [
        { op: "test", path: "/metadata/uid", value: "env-uid" },
        { op: "test", path: "/metadata/generation", value: 1 },
        {
          op: "add",
          path: "/spec/clusters/0/members/-",
          value: { name: "c", config: { scalingGroup: "g", maxReplicas: 3 }, spec: { replicas: 1 } },
        },
      ],
    });
  });

  it("adds the segment of its cluster when the Env has none", () => {
    const e = {
      ...env(),
      spec: { ...env().spec, clusters: [{ clusterID: "far", members: [{ name: "x" }] }] },
    };
    const plan = planned(e as SandboxEnv, "add-member", { member: "c" });
    expect(plan.ok && plan.ops.at(-1)).toEqual({
      op: "add",
      path: "/spec/clusters/-",
      value: { clusterID: "local", members: [{ name: "c" }] },
    });
    expect(planEnvEdit(e as SandboxEnv, { op: "add-member", member: "x" }, "local")).toMatchObject({
      ok: false,
      status: 409,
      field: "member",
      message: expect.stringContaining('cluster segment "far"'),
    });
  });

  it("refuses a member it has (409) and one it lacks (404), naming the field and the members", () => {
    expect(planEnvEdit(env(), { op: "add-member", member: "a" }, "local")).toMatchObject({
      ok: false,
      status: 409,
      field: "member",
    });
    expect(planEnvEdit(env(), { op: "remove-member", member: "zz" }, "local")).toEqual({
      ok: false,
      status: 404,
      field: "member",
      message: 'SandboxEnv "ns/py" has no member "zz" in cluster segment "local" (members: a, b)',
    });
  });

  it("removes a member by index, testing its name", () => {
    const plan = planned(env(), "remove-member", { member: "b" });
    expect(plan.ok && plan.ops.slice(2)).toEqual([
      { op: "test", path: "/spec/clusters/0/members/1/name", value: "b" },
      { op: "remove", path: "/spec/clusters/0/members/1" },
    ]);
  });

  it("sets and removes config fields and replicas, and says the autoscaler moves them", () => {
    const plan = planned(env(), "set-member", {
      member: "a",
      maxReplicas: "6",
      minReplicas: "none",
      replicas: "3",
    });
    expect(plan.ok && plan.ops.slice(2)).toEqual([
      { op: "remove", path: "/spec/clusters/0/members/0/config/minReplicas" },
      { op: "add", path: "/spec/clusters/0/members/0/config/maxReplicas", value: 6 },
      { op: "add", path: "/spec/clusters/0/members/0/spec/replicas", value: 3 },
    ]);
    expect(plan.ok && plan.summary).toBe(
      'set member "a": config.minReplicas 1→unset, config.maxReplicas 4→6, replicas 2→3, (group "g" is autoscaled: the autoscaler moves these replicas within the bounds)',
    );
  });

  it("gives a member without a config one outside every group unless the edit names a group", () => {
    const plan = planned(env(), "set-member", { member: "b", maxReplicas: "2", replicas: "1" });
    expect(plan.ok && plan.ops.slice(2)).toEqual([
      { op: "add", path: "/spec/clusters/0/members/1/config", value: { scalingGroup: "", maxReplicas: 2 } },
      { op: "add", path: "/spec/clusters/0/members/1/spec", value: { replicas: 1 } },
    ]);
  });

  it("writes nothing when the Env already is so", () => {
    const plan = planned(env(), "set-member", { member: "a", maxReplicas: "4", replicas: "2" });
    expect(plan).toMatchObject({ ok: true, ops: [], summary: expect.stringContaining("nothing to change") });
  });

  it("sets a group's bounds and policy fields, and removes its ceiling", () => {
    const plan = planned(env(), "set-group", {
      group: "g",
      minReplicas: "2",
      maxReplicas: "none",
      cooldownSeconds: "10",
      stabilizationSeconds: "5",
    });
    expect(plan.ok && plan.ops.slice(2)).toEqual([
      { op: "add", path: "/spec/autoscaling/groups/0/minReplicas", value: 2 },
      { op: "remove", path: "/spec/autoscaling/groups/0/maxReplicas" },
      { op: "add", path: "/spec/autoscaling/groups/0/scaleUpPolicy/cooldownSeconds", value: 10 },
      { op: "add", path: "/spec/autoscaling/groups/0/scaleDownPolicy/stabilizationSeconds", value: 5 },
    ]);
  });

  it("adds a missing group (and spec.autoscaling), and removes one", () => {
    const bare = envWithMembers([{ name: "a" }] as never);
    const plan = planned(bare, "set-group", {
      group: "h",
      enabled: "true",
      maxReplicas: "3",
      mode: "Aggressive",
    });
    expect(plan.ok && plan.ops.slice(2)).toEqual([
      {
        op: "add",
        path: "/spec/autoscaling",
        value: {
          groups: [{ name: "h", enabled: true, maxReplicas: 3, scaleUpPolicy: { mode: "Aggressive" } }],
        },
      },
    ]);
    const second = planned(env(), "set-group", { group: "h" });
    expect(second.ok && second.ops.at(-1)).toEqual({
      op: "add",
      path: "/spec/autoscaling/groups/-",
      value: { name: "h" },
    });
    const removed = planned(env(), "remove-group", { group: "g" });
    expect(removed.ok && removed.ops.at(-1)).toEqual({ op: "remove", path: "/spec/autoscaling/groups/0" });
    expect(planEnvEdit(env(), { op: "remove-group", group: "nope" }, "local")).toMatchObject({
      status: 404,
      field: "group",
      message: expect.stringContaining("(groups: g)"),
    });
  });

  it("refuses every edit of an Env being deleted", () => {
    const e = env();
    e.metadata = { ...e.metadata, deletionTimestamp: "2026-11-26T10:00:00Z" };
    const edit: EnvEdit = { op: "remove-member", member: "a" };
    expect(planEnvEdit(e, edit, "local")).toMatchObject({ ok: false, status: 409, field: "env" });
  });
});
