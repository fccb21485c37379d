import { describe, expect, it } from "vitest";
import { GROUP_STAMPS_ANNOTATION, groupStampsOf } from "../../lib/autoscale/group-stamps.ts";
import { planAutoscale } from "../../lib/autoscale/plan-autoscale.ts";
import type { PoolAutoScalingStatus } from "../../lib/crd/autoscaling.ts";
import { REPLACE_ON_RESET_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { encodeMark, PENDING_REQUESTS_PREFIX } from "../../lib/pool/pending-requests.ts";
import { autoscalingGroup, type GroupOptions } from "../support/autoscaling-group.ts";

// One Env's autoscaler writes on plain data, with a fixed `now`: the replicas patch on the Env with
// the group's stamps in it, the bookkeeping on the pools, and what a lost bookkeeping write cannot
// undo.

const NOW = new Date("2026-11-24T12:00:00Z");
const agoText = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d+Z$/, "Z");

function env(o: GroupOptions = {}, annotations?: Record<string, string>): SandboxEnv {
  return {
    metadata: {
      name: "e",
      namespace: "ns",
      uid: "env-uid",
      generation: 4,
      resourceVersion: "7",
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      templateRef: { name: "t" },
      clusters: [{ clusterID: "local", members: [{ name: "a", config: { scalingGroup: "default" } }] }],
      autoscaling: { groups: [autoscalingGroup(o)] },
    },
  } as SandboxEnv;
}

/** pool is member a's pool with `waiting` creates published and its stored bookkeeping. */
function pool(
  owner: SandboxEnv,
  waiting: number,
  autoscaling?: PoolAutoScalingStatus,
  o: { template?: string } = {},
): SandboxPool {
  return {
    metadata: {
      name: "a",
      namespace: "ns",
      uid: "pool-uid",
      generation: 2,
      ownerReferences: [envOwnerReference(owner, true)],
      annotations: { [`${PENDING_REQUESTS_PREFIX}h`]: encodeMark({ count: waiting, at: NOW }) },
    },
    spec: { replicas: 0, templateName: o.template ?? "t" } as SandboxPool["spec"],
    status: { ...(autoscaling ? { autoscaling } : {}) },
  } as SandboxPool;
}

/**
 * busyMember sets member a's replicas on the Env, and gives it a pool with `waiting` creates
 * published and `running` pods, all busy.
 */
function busyMember(e: SandboxEnv, replicas: number, running: number, waiting: number) {
  e.spec.clusters = [
    {
      clusterID: "local",
      members: [{ name: "a", spec: { replicas } as never, config: { scalingGroup: "default" } }],
    },
  ];
  const busy = { ...pool(e, waiting), spec: { replicas, templateName: "t" } as SandboxPool["spec"] };
  const pods = Array.from({ length: running }, (_, i) => ({
    metadata: {
      name: `a-${i}`,
      labels: { "agentbox.navix.sh/sandbox-pool": "a", "agentbox.navix.sh/sandbox-phase": "running" },
      ownerReferences: [poolOwnerReference(busy)],
    },
  }));
  return { pool: busy, pods };
}

const patchOf = (plan: ReturnType<typeof planAutoscale>) => {
  const write = plan.envWrite?.write;
  return write?.op === "patch" ? write.patch : [];
};

describe("planAutoscale: the Env patch", () => {
  it("tests the Env's spec as read, then moves the replicas and stamps the group in the same patch", () => {
    const e = env();
    const plan = planAutoscale({ env: e, pools: [pool(e, 3)], pods: [] }, "local", NOW);
    expect(patchOf(plan)).toEqual([
      { op: "test", path: "/metadata/uid", value: "env-uid" },
      { op: "test", path: "/metadata/generation", value: 4 },
      { op: "add", path: "/spec/clusters/0/members/0/spec", value: { replicas: 3 } },
      // The Env had no annotations: the whole map is added, under its resourceVersion.
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      {
        op: "add",
        path: "/metadata/annotations",
        value: {
          [GROUP_STAMPS_ANNOTATION]: JSON.stringify({ "local/default": { lastScaleUpTime: agoText(0) } }),
        },
      },
    ]);
    expect(plan.poolWrites).toHaveLength(1);
  });

  it("keeps the cooldown when the pools lost their lastScaleUpTime: the Env's stamp still holds it", () => {
    // A scale-up 5 s ago whose pool bookkeeping never landed; 3 creates wait, 1 pod still ordered.
    const stamped = env(
      { maxReplicas: 100 },
      {
        [GROUP_STAMPS_ANNOTATION]: JSON.stringify({ "local/default": { lastScaleUpTime: agoText(5) } }),
      },
    );
    const { pool: busy, pods } = busyMember(stamped, 10, 9, 3);
    const within = planAutoscale({ env: stamped, pools: [busy], pods }, "local", NOW);
    // Within the 30 s cooldown: just the demand (3 waiting − 1 ordered = 2), not the mode's +5.
    expect(within.changes).toEqual([expect.objectContaining({ from: 10, to: 12, reason: "Reactive" })]);
    const unstamped = env({ maxReplicas: 100 });
    unstamped.spec.clusters = stamped.spec.clusters;
    const after = planAutoscale({ env: unstamped, pools: [busy], pods }, "local", NOW);
    expect(after.changes).toEqual([expect.objectContaining({ from: 10, to: 15 })]);
  });

  it("keeps other clusters' stamps as they are, drops this cluster's groups no longer in the Env, reads garbage as none", () => {
    const e = env(
      {},
      {
        [GROUP_STAMPS_ANNOTATION]: JSON.stringify({
          "local/gone": { lastScaleUpTime: agoText(9) },
          "local/default": { lastScaleDownTime: agoText(99) },
          "east/default": { lastScaleUpTime: agoText(1) },
          "east/gone": { lastScaleUpTime: agoText(1) },
        }),
        other: "kept",
      },
    );
    const plan = planAutoscale({ env: e, pools: [pool(e, 2)], pods: [] }, "local", NOW);
    const stampOp = patchOf(plan).find((op) => op.path.startsWith("/metadata/annotations"));
    expect(stampOp).toEqual({
      op: "replace",
      path: `/metadata/annotations/${GROUP_STAMPS_ANNOTATION.replace("/", "~1")}`,
      value: JSON.stringify({
        "east/default": { lastScaleUpTime: agoText(1) },
        "east/gone": { lastScaleUpTime: agoText(1) },
        "local/default": { lastScaleDownTime: agoText(99), lastScaleUpTime: agoText(0) },
      }),
    });
    expect(groupStampsOf(env({}, { [GROUP_STAMPS_ANNOTATION]: "{not json" })).size).toBe(0);
    expect(
      groupStampsOf(env({}, { [GROUP_STAMPS_ANNOTATION]: '{"local/default":{"lastScaleUpTime":7}}' })),
    ).toEqual(new Map([["local/default", {}]]));
  });

  it("keeps each cluster's cooldown to itself: another cluster's recent scale-up does not hold this one", () => {
    const e = env(
      {},
      { [GROUP_STAMPS_ANNOTATION]: JSON.stringify({ "east/default": { lastScaleUpTime: agoText(1) } }) },
    );
    const { pool: busy, pods } = busyMember(e, 4, 4, 1);
    // Cooled down here: the mode's growth (Default: +2) beats the demand of 1.
    const plan = planAutoscale({ env: e, pools: [busy], pods }, "local", NOW);
    expect(plan.changes).toEqual([expect.objectContaining({ from: 4, to: 6 })]);
  });

  it("never reads or writes a pool that does not serve the Env (another owner, another template)", () => {
    const e = env();
    const other = { ...env(), metadata: { name: "x", namespace: "ns", uid: "other-uid" } } as SandboxEnv;
    for (const foreign of [
      pool(other, 3, { idleZeroSince: agoText(1) }),
      pool(e, 3, undefined, { template: "x" }),
    ]) {
      const plan = planAutoscale({ env: e, pools: [foreign], pods: [] }, "local", NOW);
      expect(plan.poolWrites).toEqual([]);
      expect(plan.envWrite).toBeUndefined();
    }
  });
});

describe("planAutoscale: the pool bookkeeping", () => {
  it("merges the block into a pool read without a status, never replacing a status written since", () => {
    const e = env();
    const bare = { ...pool(e, 2), status: undefined } as SandboxPool;
    const [write] = planAutoscale({ env: e, pools: [bare], pods: [] }, "local", NOW).poolWrites;
    expect(write?.write).toEqual({
      op: "status",
      status: {
        autoscaling: expect.objectContaining({ lastScaleUpTime: agoText(0), observedGeneration: 2 }),
      },
    });
  });

  it("tests the block as read (and the pool's uid) when the pool has a status", () => {
    const e = env();
    const before = { idleZeroSince: agoText(3) };
    const [write] = planAutoscale({ env: e, pools: [pool(e, 2, before)], pods: [] }, "local", NOW).poolWrites;
    expect(write?.write).toMatchObject({
      op: "patch-status",
      patch: [
        { op: "test", path: "/metadata/uid", value: "pool-uid" },
        { op: "test", path: "/status/autoscaling", value: before },
        {
          op: "add",
          path: "/status/autoscaling",
          value: expect.objectContaining({ lastScaleUpTime: agoText(0) }),
        },
      ],
    });
  });
});

describe("planAutoscale: resets that serve nobody", () => {
  /** stopping is a pod of member a being reset, with `annotations` (e.g. a replacement mark). */
  const stopping = (i: number, annotations: Record<string, string> = {}) => ({
    metadata: {
      name: `a-${i}`,
      labels: { "agentbox.navix.sh/sandbox-pool": "a", "agentbox.navix.sh/sandbox-phase": "stopping" },
      annotations,
      ownerReferences: [
        {
          apiVersion: "agents.navix.sh/v1alpha1",
          kind: "SandboxPool",
          name: "a",
          uid: "pool-uid",
          controller: true,
        },
      ],
    },
  });

  it("counts a reset under way as supply, never one that ends in a replacement", () => {
    const e = env({ maxReplicas: 10 });
    const { pool: busy } = busyMember(e, 2, 0, 2);
    const resetting = [stopping(0), stopping(1)];
    expect(planAutoscale({ env: e, pools: [busy], pods: resetting }, "local", NOW).changes).toEqual([]);
    const replaced = resetting.map((p) => ({
      ...p,
      metadata: {
        ...p.metadata,
        annotations: { [REPLACE_ON_RESET_ANNOTATION]: "the pool's reset policy is Replace" },
      },
    }));
    expect(planAutoscale({ env: e, pools: [busy], pods: replaced }, "local", NOW).changes).toEqual([
      expect.objectContaining({ from: 2, reason: "Reactive" }),
    ]);
  });
});
