import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { EnvAutoscalingGroup } from "../../lib/crd/autoscaling.ts";
import { ADOPTED_POOL_ANNOTATION, ENV_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { adoptionEnv, planAdoption } from "../../lib/env/adoption.ts";
import { type EnvSnapshot, planEnv } from "../../lib/env/plan-env.ts";
import { renderMember } from "../../lib/env/render-member.ts";
import type { Action } from "../../lib/kube/action.ts";
import { envsNamingPools, envsUsingTemplates } from "../../lib/membership/env-members.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";
import { auditEnvTargets } from "../../lib/triggers/audit-targets.ts";

// One Env run's decisions on plain data, with a fixed `now`: what it creates, patches, deletes and
// how its status reads; then the triggers that find the Envs to run.

const NOW = new Date("2026-11-23T12:00:00Z");
const LATER = new Date("2026-11-23T12:05:00Z");

const TEMPLATE: SandboxTemplate = {
  metadata: { name: "python" },
  spec: {
    version: "v1",
    template: { spec: { containers: [{ name: "main", image: "py:1" }] } },
    idleImage: "idle:1",
  },
};

function env(members: SandboxEnv["spec"]["clusters"], extra: Partial<SandboxEnv["spec"]> = {}): SandboxEnv {
  return {
    metadata: { name: "py", namespace: "ns", uid: "env-uid", resourceVersion: "3", generation: 1 },
    spec: { templateRef: { name: "python" }, mode: "WarmPool", clusters: members, ...extra },
  };
}

const local = (...names: string[]) => [
  {
    clusterID: "local",
    members: names.map((name) => ({ name, config: { scalingGroup: "default", minReplicas: 2 } })),
  },
  { clusterID: "remote", members: [{ name: "far-away" }] },
];

/** memberPool is the pool an earlier run created for a member, with a status. */
function memberPool(e: SandboxEnv, name: string, status: SandboxPool["status"] = {}): SandboxPool {
  const member = e.spec.clusters?.[0]?.members?.find((m) => m.name === name) ?? { name };
  const r = renderMember(e, member, { template: TEMPLATE, pullSecret: false });
  return {
    metadata: {
      name,
      namespace: "ns",
      uid: `${name}-uid`,
      resourceVersion: "11",
      labels: r.labels,
      annotations: r.annotations,
      ownerReferences: [envOwnerReference(e, true)],
    },
    spec: r.spec as SandboxPool["spec"],
    status,
  };
}

const snap = (
  e: SandboxEnv,
  pools: SandboxPool[],
  template: SandboxTemplate | null = TEMPLATE,
): EnvSnapshot => ({
  env: e,
  pools,
  template,
  pullSecret: false,
  pods: [],
});

const ops = (actions: Action[]) => actions.map((a) => `${a.write.op} ${a.target.kind}/${a.target.name}`);

/** settle applies a run's status write to the Env, as the apiserver would store it. */
function settle(e: SandboxEnv, actions: Action[]): SandboxEnv {
  const write = actions.find((a) => a.write.op === "patch-status")?.write;
  const value =
    write?.op === "patch-status" ? (write.patch[1] as { value: SandboxEnv["status"] }).value : e.status;
  return { ...e, ...(value ? { status: structuredClone(value) } : {}) };
}

describe("planEnv", () => {
  it("creates the missing local members (never a foreign one) owned by the Env, and reports them Missing", () => {
    const e = env(local("a", "b"));
    const actions = planEnv(snap(e, []), "local", NOW);
    expect(ops(actions)).toEqual([
      "create SandboxPool/a",
      "create SandboxPool/b",
      "patch-status SandboxEnv/py",
    ]);
    const created = actions[0]?.write.op === "create" ? (actions[0].write.object as SandboxPool) : undefined;
    expect(created?.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "agents.navix.sh/v1alpha1",
        kind: "SandboxEnv",
        name: "py",
        uid: "env-uid",
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(created?.metadata?.labels?.[ENV_LABEL]).toBe("py");
    expect(created?.spec.replicas).toBe(2);
    const status = settle(e, actions).status;
    expect(status?.clusters?.map((c) => c.clusterID)).toEqual(["local"]);
    expect(status?.clusters?.[0]?.observedMembers?.map((m) => m.state)).toEqual(["Missing", "Missing"]);
    expect(status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("False");
  });

  it("writes nothing at rest: a second run over what the first wrote plans no action", () => {
    const e = env(local("a"));
    const pool = memberPool(e, "a", { idleReplicas: 2, runningReplicas: 0 });
    const first = planEnv(snap(e, [pool]), "local", NOW);
    expect(ops(first)).toEqual(["patch-status SandboxEnv/py"]);
    const settled = settle(e, first);
    expect(planEnv(snap(settled, [pool]), "local", LATER)).toEqual([]);
    const status = settled.status;
    expect(status).toMatchObject({ memberCount: 1, desiredReplicas: 2, idleReplicas: 2, runningReplicas: 0 });
    expect(status?.scalingGroups).toEqual([
      { name: "default", totalIdle: 2, totalRunning: 0, totalDesired: 2 },
    ]);
    expect(status?.clusters?.[0]).toMatchObject({
      clusterID: "local",
      isLocal: true,
      lastSnapshotTime: "2026-11-23T12:00:00Z",
    });
    expect(status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual([
      "Ready=True/AllMembersActive",
      "TemplateConsistent=True/TemplateConsistent",
      "AutoscalingActive=False/NoAutoscalingGroups",
    ]);
  });

  it("reverts a replica change the Env did not make, with a Warning that says where replicas live", () => {
    const e = env(local("a"));
    const settled = settle(e, planEnv(snap(e, [memberPool(e, "a")]), "local", NOW));
    const scaled = memberPool(e, "a");
    scaled.spec.replicas = 7;
    scaled.metadata = { ...scaled.metadata, generation: 4 };
    const [patch] = planEnv(snap(settled, [scaled]), "local", LATER);
    // The precondition is the spec as read (uid, generation), not the resourceVersion that every
    // status and annotation write moves.
    expect(patch?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path: "/metadata/uid", value: "a-uid" },
        { op: "test", path: "/metadata/generation", value: 4 },
        { op: "add", path: "/spec/replicas", value: 2 },
      ],
    });
    expect(patch?.event).toMatchObject({ type: "Warning", reason: "ReplicasReverted" });
    expect(patch?.event?.note).toMatch(
      /spec.replicas 7 reverted to 2: SandboxEnv "py" owns this pool's replicas/,
    );
  });

  it("propagates the Env's own replica change with a Normal Event", () => {
    const e = env(local("a"));
    const settled = settle(e, planEnv(snap(e, [memberPool(e, "a")]), "local", NOW));
    const raised = structuredClone(settled);
    const m = raised.spec.clusters?.[0]?.members?.[0];
    if (m) m.spec = { replicas: 5, podCreationImagePolicy: "IdleImage" };
    const [patch] = planEnv(snap(raised, [memberPool(e, "a")]), "local", LATER);
    expect(patch?.event).toMatchObject({ type: "Normal", reason: "MemberUpdated" });
  });

  it("leaves a pool of a member's name that it does not own alone, and reports it Inconsistent", () => {
    const e = env(local("a"));
    const stranger = memberPool(e, "a");
    stranger.metadata = { ...stranger.metadata, ownerReferences: [] };
    stranger.spec.replicas = 9;
    const actions = planEnv(snap(e, [stranger]), "local", NOW);
    expect(ops(actions)).toEqual(["patch-status SandboxEnv/py"]);
    const member = settle(e, actions).status?.clusters?.[0]?.observedMembers?.[0];
    expect(member?.state).toBe("Inconsistent");
  });

  it("deletes owned pools that are no longer members, by uid, and nothing while the Env is deleted", () => {
    const e = env(local("a"));
    const former = memberPool(env(local("a", "gone")), "gone");
    const actions = planEnv(snap(e, [memberPool(e, "a"), former]), "local", NOW);
    const del = actions.find((a) => a.write.op === "delete");
    expect(del).toMatchObject({ target: { name: "gone" }, write: { op: "delete", uid: "gone-uid" } });
    const deleting = { ...e, metadata: { ...e.metadata, deletionTimestamp: "2026-11-23T11:00:00Z" } };
    expect(planEnv(snap(deleting, [former]), "local", NOW)).toEqual([]);
  });

  it("deletes nothing when the Env has no segment for this cluster (a wrong cluster ID)", () => {
    const e = env(local("a"));
    const pool = memberPool(e, "a");
    expect(planEnv(snap(e, [pool]), "eu-west-1", NOW).some((a) => a.write.op === "delete")).toBe(false);
    // The same Env with its local segment emptied on purpose does remove the pool.
    const emptied = { ...e, spec: { ...e.spec, clusters: [{ clusterID: "local", members: [] }] } };
    expect(planEnv(snap(emptied, [pool]), "local", NOW).some((a) => a.write.op === "delete")).toBe(true);
  });

  it("creates nothing without the template, and says why in the status", () => {
    const e = env(local("a"));
    const actions = planEnv(snap(e, [], null), "local", NOW);
    expect(ops(actions)).toEqual(["patch-status SandboxEnv/py"]);
    const status = settle(e, actions).status;
    expect(status?.conditions?.find((c) => c.type === "TemplateConsistent")).toMatchObject({
      status: "False",
      reason: "TemplateNotFound",
    });
    expect(status?.conditions?.find((c) => c.type === "Ready")?.message).toMatch(
      /a: Missing \(SandboxTemplate "python" does not exist\)/,
    );
  });

  it("marks a member Saturated from its pool's last scale-up attempt, until the group's cooldown ends", () => {
    // The group as the apiserver stores it: every policy field defaulted.
    const group = v.parse(EnvAutoscalingGroup, {
      name: "default",
      enabled: true,
      scaleUpPolicy: { saturationCooldownSeconds: 120 },
    });
    const e = env(local("a"), { autoscaling: { groups: [group] } });
    const pool = memberPool(e, "a", {
      autoscaling: {
        lastScaleUpAttemptTime: "2026-11-23T11:59:00Z",
        lastScaleUpAttemptResult: "Insufficient",
      },
    });
    const status = settle(e, planEnv(snap(e, [pool]), "local", NOW)).status;
    expect(status?.clusters?.[0]?.observedMembers?.[0]).toMatchObject({
      state: "Saturated",
      saturatedUntil: "2026-11-23T12:01:00Z",
    });
    expect(status?.conditions?.find((c) => c.type === "AutoscalingActive")).toMatchObject({
      status: "True",
      reason: "GroupsAutoscaled",
    });
    const after = settle(e, planEnv(snap(e, [pool]), "local", LATER)).status;
    expect(after?.clusters?.[0]?.observedMembers?.[0]?.state).toBe("Active");
  });

  it("keeps foreign status segments and counts them in the rollups", () => {
    const e = env(local("a"));
    e.status = {
      clusters: [
        {
          clusterID: "remote",
          observedMembers: [{ name: "far-away", idleCount: 5, runningCount: 1, desiredReplicas: 6 }],
        },
      ],
    };
    const status = settle(
      e,
      planEnv(snap(e, [memberPool(e, "a", { idleReplicas: 2 })]), "local", NOW),
    ).status;
    expect(status?.clusters?.map((c) => c.clusterID)).toEqual(["local", "remote"]);
    expect(status).toMatchObject({ memberCount: 2, idleReplicas: 7, runningReplicas: 1, desiredReplicas: 8 });
  });
});

describe("adoption", () => {
  const legacy: SandboxPool = {
    metadata: { name: "old", namespace: "ns", uid: "old-uid", resourceVersion: "5" },
    spec: {
      replicas: 3,
      podCreationImagePolicy: "IdleImage",
      template: { spec: { containers: [{ name: "m", image: "i" }] } },
    },
  };

  it("gives a standalone pool a same-named Env holding its spec, and skips the rest", () => {
    const member = { ...legacy, metadata: { ...legacy.metadata, name: "m", labels: { [ENV_LABEL]: "x" } } };
    const covered = { ...legacy, metadata: { ...legacy.metadata, name: "covered" } };
    const coveringEnv = { ...env([]), metadata: { name: "covered", namespace: "ns" } };
    const actions = planAdoption([legacy, member, covered], [coveringEnv], "local");
    expect(ops(actions)).toEqual(["create SandboxEnv/old"]);
    expect(adoptionEnv(legacy, "local")).toMatchObject({
      metadata: { name: "old", annotations: { [ADOPTED_POOL_ANNOTATION]: "old-uid" } },
      spec: {
        clusters: [
          { clusterID: "local", members: [{ name: "old", spec: legacy.spec, config: { scalingGroup: "" } }] },
        ],
      },
    });
  });

  it("attaches the adopted pool with a non-controlling reference and the Env label, not touching its spec", () => {
    const e = {
      ...adoptionEnv(legacy, "local"),
      metadata: { ...adoptionEnv(legacy, "local").metadata, uid: "env-uid", resourceVersion: "1" },
    };
    const [attach] = planEnv(snap(e, [legacy], null), "local", NOW);
    const patch = attach?.write.op === "patch" ? attach.write.patch : [];
    expect(patch[1]).toEqual({
      op: "add",
      path: "/metadata/ownerReferences",
      value: [
        {
          apiVersion: "agents.navix.sh/v1alpha1",
          kind: "SandboxEnv",
          name: "old",
          uid: "env-uid",
          controller: false,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(patch.some((o) => o.path.startsWith("/spec"))).toBe(false);
    expect(patch).toContainEqual({ op: "add", path: "/metadata/labels", value: { [ENV_LABEL]: "old" } });
    expect(attach?.event?.reason).toBe("Adopted");
    // Once attached, the next run adds no second reference.
    const attached: SandboxPool = {
      ...legacy,
      metadata: { ...legacy.metadata, ownerReferences: [envOwnerReference(e, false)] },
    };
    expect(planEnv(snap(e, [attached], null), "local", NOW).some((a) => a.why.startsWith("adopt"))).toBe(
      false,
    );
  });
});

describe("Env triggers", () => {
  const event = (resource: string, name: string, extra: Record<string, unknown> = {}) => ({
    verb: "patch",
    objectRef: {
      resource,
      name,
      namespace: "ns",
      apiGroup: resource === "secrets" ? undefined : "agents.navix.sh",
      ...extra,
    },
  });

  it("maps Env spec writes and pull Secrets to Envs, pool and template writes to lookups", () => {
    const targets = auditEnvTargets([
      event("sandboxenvs", "py"),
      event("sandboxenvs", "py", { subresource: "status" }),
      event("sandboxpools", "a", { subresource: "scale" }),
      event("sandboxpools", "busy", { subresource: "status" }),
      event("sandboxpools", "marked"),
      event("sandboxpools", "marked", { subresource: "status" }),
      event("sandboxtemplates", "python", { namespace: undefined }),
      event("secrets", "ips-other"),
      event("secrets", "unrelated"),
      { ...event("sandboxenvs", "failed"), responseStatus: { code: 409 } },
    ]);
    // A pool written itself (spec, metadata, scale) is urgent; one whose status alone was, not.
    expect(targets).toEqual({
      envs: ["ns/py", "ns/other"],
      pools: [
        { namespace: "ns", name: "a", urgent: true },
        { namespace: "ns", name: "busy" },
        { namespace: "ns", name: "marked", urgent: true },
      ],
      templates: ["python"],
    });
  });

  it("finds the Envs naming a written pool as a local member, and those using a written template", () => {
    const e = env(local("a"));
    expect(envsNamingPools([e], [{ namespace: "ns", name: "a" }], "local")).toEqual(["ns/py"]);
    expect(envsNamingPools([e], [{ namespace: "ns", name: "far-away" }], "local")).toEqual([]);
    expect(envsNamingPools([e], [{ namespace: "other", name: "a" }], "local")).toEqual([]);
    expect(envsUsingTemplates([e], ["python"])).toEqual(["ns/py"]);
  });
});
